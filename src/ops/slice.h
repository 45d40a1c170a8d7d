#pragma once
// The attributes of strided_slice and broadcast_to (ops/slice.cc).
#include <cstdint>
#include <string>
#include <vector>

#include "ops/common.h"

namespace tessera::ops {

// x[begin[d] : end[d] : step[d]] along every axis d, resolved (begin in
// range, step non-zero): the output extent of axis d is
// ceil((end - begin) / step), which must be positive.
struct StridedSliceAttrs {
  std::vector<int64_t> begin, end, step;
  std::string to_string() const;
};

// x stretched to `shape` by NumPy broadcasting (ONNX Expand: the output
// shape is the broadcast of x's and `shape`).
struct BroadcastToAttrs {
  Shape shape;
  std::string to_string() const { return "shape=" + shape_to_string(shape); }
};

}  // namespace tessera::ops
