#pragma once
// The attributes of conv3d (ops/conv3d.cc).
#include <array>
#include <cstdint>
#include <string>

#include "ops/common.h"

namespace tessera::ops {

struct Conv3dAttrs {
  std::array<int64_t, 3> strides{1, 1, 1}, dilations{1, 1, 1};
  std::array<int64_t, 6> pads{0, 0, 0, 0, 0, 0};  // front, top, left, back, bottom, right (ONNX's order)
  int64_t groups = 1;
  std::string to_string() const;
};

}  // namespace tessera::ops
