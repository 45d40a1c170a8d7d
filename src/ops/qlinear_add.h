#pragma once
// The sum of two quantized tensors, quantized (ONNX's com.microsoft
// QLinearAdd, a residual connection of an int8 network), with a ReLU fused:
//
//   y = saturate(round((a - a_zp) * a_scale / y_scale + (b - b_zp) * b_scale / y_scale) + y_zp)
//
// per tensor (a, b and y each one scale and zero point), a and b of one
// shape, int8 or uint8 each. Elementwise: it joins the int8 convolution
// before it as that kernel's epilogue, so a residual block's output never
// leaves int8. The two ratios are fixed-point multipliers (add_multipliers)
// and the arithmetic is in integers, rounding halves up: exact, the same on
// every target and in the reference (float arithmetic would round
// differently where a target contracts a product and a sum into one FMA).
#include <cstdint>
#include <string>

#include "ir/tensor.h"
#include "ops/quantize.h"

namespace tessera::ops {

struct QLinearAddAttrs {
  QuantizeAttrs a, b, y;
  bool relu = false;  // saturates below at y's zero point
  std::string to_string() const;
  void validate() const;  // throws tessera::Error naming qlinear_add
};

// a_scale / y_scale and b_scale / y_scale as integers over 2^shift, shift
// as large as keeps |a - a_zp| * a + |b - b_zp| * b within int32 (up to 24).
struct AddMultipliers {
  int64_t a = 0, b = 0;
  int shift = 0;
};
AddMultipliers add_multipliers(const QLinearAddAttrs& attrs);

ir::Tensor qlinear_add(const ir::Tensor& a, const ir::Tensor& b, const QLinearAddAttrs& attrs);

namespace reference {
void qlinear_add(const float* a, const float* b, int64_t n, const QLinearAddAttrs& attrs, float* y);
}  // namespace reference

}  // namespace tessera::ops
