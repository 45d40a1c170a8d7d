#pragma once
// batch_norm at inference: y = (x - mean) / sqrt(var + epsilon) * gamma + beta
// along one channel axis. Compile has no kernel for it: simplify_inference
// folds it into a multiply and an add (or the convolution before it).
#include <string>

#include "ops/common.h"

namespace tessera::ops {

struct BatchNormAttrs {
  double epsilon = 1e-5;
  int64_t axis = 1;  // the channel axis of x (3 for NHWC)
  std::string to_string() const;
};

}  // namespace tessera::ops
