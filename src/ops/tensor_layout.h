#pragma once
// Activation layouts as TVM writes them: upper-case letters are the primal
// axes ("NCHW", "NHWC"); a number and a lower-case letter is the inner block
// of that primal axis ("NCHW8c": channel c = outer * 8 + inner, the block
// last). Used by layout_transform's shape inference and its reference.
#include <cstdint>
#include <string>
#include <vector>

#include "ops/common.h"

namespace tessera::ops {

class Layout {
 public:
  struct Axis {
    char name;          // 'N', 'C', ... (upper case; a block uses its primal's letter)
    int64_t block = 0;  // 0: a primal axis; else the inner block size
  };

  // Throws tessera::Error naming the string when it is not a layout: an axis
  // twice, a block without its primal axis, a block of size < 1.
  static Layout parse(const std::string& text);

  const std::string& text() const { return text_; }
  const std::vector<Axis>& axes() const { return axes_; }
  size_t rank() const { return axes_.size(); }
  // Position of primal axis `name`, or -1.
  int64_t primal_position(char name) const;
  // Block size of primal axis `name` (1 when it is not split).
  int64_t block_of(char name) const;
  // The upper-case letters, sorted: two layouts can convert iff they match.
  std::string primal_letters() const;

 private:
  std::string text_;
  std::vector<Axis> axes_;
};

// "NCHW<x>c" (x >= 1): channels in blocks of x, the block last.
bool is_channel_blocked(const std::string& layout);

// The shape in `dst` of a tensor of shape `shape` in `src`; throws when the
// shape does not fit src (rank, block extents) or a dst block does not divide
// its axis.
Shape layout_transform_shape(const Shape& shape, const Layout& src, const Layout& dst);

// Reference: out (in dst) = data (in src), element by element.
void layout_transform(const float* data, const Shape& shape, const Layout& src, const Layout& dst, float* out);

}  // namespace tessera::ops
