#pragma once
// A quantized 2-D convolution in NCHW: ONNX QLinearConv with per-tensor
// input and output quantization and per-output-channel symmetric weights
// (what onnxruntime's quantize_static writes), TVM's qnn.conv2d followed by
// qnn.requantize:
//
//   acc[n,f,y,x] = sum_{c,ry,rx} (x[n,c,..] - x_zp) * w[f,c,ry,rx] + bias[f]      int32, exact
//   y[n,f,y,x]   = saturate(round(acc * (x_scale * w_scale[f] / y_scale)) + y_zp)   halves to even
//
// x (N, C, H, W) int8 or uint8, w (O, C, KH, KW) int8, w_scale (O) float32,
// bias (O) int32 in units of x_scale * w_scale[f]; y int8 or uint8
// (ops/quantize.h). The kernel sums the products of the stored values and
// subtracts x_zp * sum(w[f]) once per channel (the weights' sums: a stage
// of their own), so its inner loop multiplies bytes as the int8 dot-product
// instructions do; the padding holds x_zp and so contributes nothing.
#include <string>

#include "ir/tensor.h"
#include "ops/conv2d.h"

namespace tessera::ops {

struct QLinearConv2dAttrs {
  Conv2dAttrs conv;  // NCHW / OIHW, one group
  float x_scale = 1.0f, y_scale = 1.0f;
  int64_t x_zero_point = 0, y_zero_point = 0;
  std::string x_dtype = "uint8", y_dtype = "uint8";
  bool relu = false;  // saturates below at y_zero_point: a ReLU fused
  std::string to_string() const;
  // Throws tessera::Error naming qlinear_conv2d for what it cannot compute.
  void validate() const;
};

Shape qlinear_conv2d_output_shape(const Shape& x, const Shape& w, const Shape& w_scale, const Shape& bias,
                                  const QLinearConv2dAttrs& attrs);
// x stored as attrs.x_dtype, w as Int8, bias as Int32 (the caller's
// placeholders); the output stored as attrs.y_dtype, tagged
// qlinear_conv2d_requantize, after the accumulator tagged qlinear_conv2d_nchw.
ir::Tensor qlinear_conv2d_nchw(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor& w_scale,
                               const ir::Tensor& bias, const QLinearConv2dAttrs& attrs);

namespace reference {
// Exact integer sums (int64), the requantization in float in the kernel's order.
void qlinear_conv2d_nchw(const float* x, const Shape& x_shape, const float* w, const Shape& w_shape,
                         const float* w_scale, const float* bias, const QLinearConv2dAttrs& attrs, float* y);
}  // namespace reference

}  // namespace tessera::ops
