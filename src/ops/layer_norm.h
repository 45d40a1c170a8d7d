#pragma once
// The attributes of layer_norm (ops/layer_norm.cc).
#include <cstdint>
#include <string>

#include "ops/common.h"

namespace tessera::ops {

struct LayerNormAttrs {
  int64_t axis = -1;  // the first normalised axis; negative counts from the last
  float epsilon = 1e-5f;
  std::string to_string() const { return "axis=" + std::to_string(axis) + " epsilon=" + number_to_string(epsilon); }
};

}  // namespace tessera::ops
