#pragma once
// Constant padding as its own stage, so schedules can inline it or compute it at
// the consumer: out[i] = in[i - before] inside the original bounds, else `value`.
#include <string>

#include "ir/tensor.h"
#include "ops/common.h"

namespace tessera::ops {

// The attributes of the pad operator.
struct PadAttrs {
  Shape before, after;  // one entry per axis
  float value = 0.0f;
  std::string to_string() const {
    return "before=" + shape_to_string(before) + " after=" + shape_to_string(after) +
           " value=" + number_to_string(value);
  }
};

// before/after: padding per dimension (same rank as data). Tag "pad".
ir::Tensor pad(const ir::Tensor& data, const Shape& before, const Shape& after, float value = 0.0f,
               const std::string& name = "pad_temp");

}  // namespace tessera::ops
