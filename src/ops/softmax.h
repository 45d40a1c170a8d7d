#pragma once
// Softmax over the last axis, in TVM's four stages (all tagged "softmax"):
//   T_softmax_maxelem(i..) max= x[i.., k]
//   T_softmax_exp(i.., j)   = exp(x[i.., j] - T_softmax_maxelem[i..])
//   T_softmax_expsum(i..)  += T_softmax_exp[i.., k]
//   T_softmax_norm(i.., j)  = T_softmax_exp[i.., j] / T_softmax_expsum[i..]
// Subtracting the row maximum keeps exp from overflowing.
#include <string>

#include "ir/tensor.h"
#include "ops/common.h"

namespace tessera::ops {

// The attributes of the softmax operator; compile declares the last axis only.
struct SoftmaxAttrs {
  int64_t axis = -1;
  std::string to_string() const { return "axis=" + std::to_string(axis); }
};

// data: rank >= 2.
ir::Tensor softmax(const ir::Tensor& data);

}  // namespace tessera::ops
