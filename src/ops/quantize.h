#pragma once
// Affine quantization (ONNX QuantizeLinear / DequantizeLinear, TVM's
// qnn.quantize / qnn.dequantize): a real value r stands for the integer
//
//   q = saturate(round(r / scale) + zero_point)      (halves to even)
//   r = (q - zero_point) * scale
//
// with q stored as int8 [-128, 127] or uint8 [0, 255] (ir/expr.h: a storage
// type, arithmetic in int32). The graph and the interpreter hold q as floats
// of integer value, as every array outside a kernel is float; a kernel stores
// it in its type. Per tensor: one scale and zero point.
#include <cstdint>
#include <string>
#include <utility>

#include "ir/tensor.h"
#include "ops/common.h"

namespace tessera::ops {

struct QuantizeAttrs {
  float scale = 1.0f;
  int64_t zero_point = 0;
  std::string dtype = "int8";  // of q: "int8" or "uint8"
  std::string to_string() const;
  // Throws tessera::Error naming `op` for a scale that is not positive and
  // finite, a dtype neither int8 nor uint8, a zero point outside its range.
  void validate(const std::string& op) const;
};

// The storage type of a quantized tensor ("int8", "uint8"); throws naming
// `op` for any other.
ir::DType quantized_type(const std::string& op, const std::string& dtype);
// Its range: [-128, 127] or [0, 255].
int64_t quantized_min(ir::DType t);
int64_t quantized_max(ir::DType t);
// The range of an operator's quantized output of `dtype`: its type's, from
// `zero_point` up with a fused ReLU. Throws naming `op` for a bad dtype.
std::pair<int64_t, int64_t> output_range(const std::string& op, const std::string& dtype, int64_t zero_point,
                                         bool relu);

// q of a float tensor (stored as attrs.dtype), and r of a quantized one.
ir::Tensor quantize(const ir::Tensor& x, const QuantizeAttrs& attrs);
ir::Tensor dequantize(const ir::Tensor& q, const QuantizeAttrs& attrs);

// DequantizeLinear along an axis (ONNX's per-axis form, as quantize_static
// writes a convolution's weights and biases):
//
//   r[..., c, ...] = (q[..., c, ...] - zero_point[c]) * scale[c]      c along `axis`
//
// q int8, uint8 or int32 (a bias), scale float32 (C), zero_point (C), held as
// floats of integer value. A weight's stays in the graph until
// graph::fuse_quantized_operators has read its integers and scales into an
// int8 kernel; fold_constants evaluates the rest.
struct DequantizePerChannelAttrs {
  int64_t axis = 0;  // non-negative (the importer resolves negative axes)
  std::string to_string() const { return "axis=" + std::to_string(axis); }
};
ir::Tensor dequantize_per_channel(const ir::Tensor& q, const ir::Tensor& scale, const ir::Tensor& zero_point,
                                  const DequantizePerChannelAttrs& attrs);

namespace reference {
void dequantize_per_channel(const float* q, const Shape& shape, const float* scale, const float* zero_point,
                            int64_t axis, float* r);
void quantize(const float* x, int64_t n, const QuantizeAttrs& attrs, float* q);
void dequantize(const float* q, int64_t n, const QuantizeAttrs& attrs, float* r);
}  // namespace reference

}  // namespace tessera::ops
