#pragma once
// The requantization every int8 kernel ends with (TVM's qnn.requantize): an
// exact int32 total of an output channel whose weight scale is w_scale, to
// the output's quantized type:
//
//   y = saturate(round(total * (x_scale * w_scale / y_scale)) + y_zero_point)    halves to even
//
// the multiplier and product in float, in this order on every side (kernel
// and reference agree exactly). Where every channel's multiplier is a power
// of two, 2^-k (power_of_two: seed 003's quantization for VTA, whose ALU
// only shifts), the total is requantized in integers instead:
//
//   y = saturate(floor((total + 2^k / 2) / 2^k) + y_zero_point)    halves up: (total + 2^(k-1)) >> k
//
// exactly what the accelerator's add-then-shift computes (TVM's "UPWARD"). Saturating below at y_zero_point is a fused
// ReLU; also above at clip_max quantized, a ReLU6.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"

namespace tessera::ops {

struct Requantization {
  float x_scale = 1.0f, y_scale = 1.0f;
  int64_t y_zero_point = 0;
  std::string y_dtype = "uint8";
  bool relu = false;
  float clip_max = 0.0f;  // > 0 with relu: the ReLU6's 6
  bool power_of_two = false;  // the multiplier is 2^-k (k >= 0): requantized by a rounding shift
  // The output's range: its type's, from y_zero_point up with a ReLU, up to
  // clip_max quantized (as quantize computes it). Throws naming `op` for a
  // bad y_dtype.
  std::pair<float, float> saturation(const std::string& op) const;
  // "scale=0.1 zero_point=3 dtype=uint8 -> ... relu": for kernels' attributes.
  std::string to_string(float x_scale_of, int64_t x_zero_point, const std::string& x_dtype) const;
};

// A float bias as the int32 an int8 anchor adds to its sum: in units of
// x_scale * w_scale (computed in double), rounded, saturated. A bias
// quantized so and dequantized (onnxruntime's) gets its integers back.
int64_t bias_in_units(float bias, float x_scale, float w_scale);

// The operands every int8 anchor takes, (x, w, w_scale, bias): x stored as
// `x_dtype`, w int8, w_scale float32, bias int32; returns the output's type
// (`y_dtype`). Throws naming `op` and the operand that differs.
ir::DType int8_anchor_dtype(const std::string& op, const std::string& x_dtype, const std::string& y_dtype,
                            const std::vector<ir::DType>& inputs);

// 2^k = y_scale / (x_scale * w_scale) of a power-of-two requantization;
// throws tessera::Error naming `op` when the ratio is no such power.
int64_t power_of_two_divisor(float x_scale, float w_scale, float y_scale, const std::string& op);

// The requantized value of `total` as an expression (stored as y_dtype).
ir::Expr requantized(const ir::Expr& total, const ir::Expr& w_scale, const Requantization& q, const std::string& op);
// The same for the references, within the saturation [lo, hi].
float requantized(int64_t total, float w_scale, const Requantization& q, float lo, float hi);

}  // namespace tessera::ops
