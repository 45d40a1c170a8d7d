#pragma once
// The attributes of take (ops/take.cc): ONNX Gather with indices known only
// at run time (token ids into an embedding table).
#include <cstdint>
#include <string>

namespace tessera::ops {

// y = data indexed along `axis` by each element of `indices`: y's shape is
// data.shape[:axis] + indices.shape + data.shape[axis+1:]. Indices are whole
// numbers held as float32; a negative one counts from the end (ONNX), one out
// of range is clamped to the axis (a kernel cannot fail a run halfway).
struct TakeAttrs {
  int64_t axis = 0;  // resolved: 0 <= axis < rank of data
  std::string to_string() const { return "axis=" + std::to_string(axis); }
};

}  // namespace tessera::ops
