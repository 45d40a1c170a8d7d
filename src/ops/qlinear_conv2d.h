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
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"
#include "ops/conv2d.h"
#include "ops/requantize.h"

namespace tessera::ops {

// Int8 kernels' blocked layouts (graph::convert_layout makes them): data
// NCHW<ic_bn>c, the weight OIHW<ic_bn/4>i<oc_bn>o4i, shape (O/oc_bn,
// C/ic_bn, KH, KW, ic_bn/4, oc_bn, 4): each output channel's 4 consecutive
// input channels are 4 adjacent bytes, one 32-bit lane of a byte dot
// product, the oc_bn lanes side by side. The output is NCHW<oc_bn>c.
std::string int8_kernel_layout(int64_t ic_bn, int64_t oc_bn);
// (ic_bn, oc_bn) of a kernel layout int8_kernel_layout wrote, else nullopt.
std::optional<std::pair<int64_t, int64_t>> int8_kernel_blocks(const std::string& kernel_layout);
// An OIHW weight (O, C, KH, KW) packed into int8_kernel_layout (element by
// element, as floats holding the integers), and back.
std::vector<float> pack_int8_kernel(const float* oihw, const Shape& shape, int64_t ic_bn, int64_t oc_bn);
std::vector<float> unpack_int8_kernel(const float* packed, const Shape& oihw_shape, int64_t ic_bn, int64_t oc_bn);
// x_zero_point * sum(w[f]) per output channel f of a weight whose first axis
// is the output (OIHW; (C, 1, KH, KW) for depthwise; a dense's (N, K)): the
// zero point's share of each output, which the blocked forms' bias (and
// qlinear_dense's) has folded (subtracted).
std::vector<int64_t> zero_point_share(const float* oihw, const Shape& shape, int64_t x_zero_point);

struct QLinearConv2dAttrs {
  // NCHW / OIHW, one group; or the blocked layouts above, where the bias
  // input is folded: bias[f] - x_zero_point * sum(w[f]) (the convolution
  // then adds products of stored bytes only; graph::convert_layout folds it).
  Conv2dAttrs conv;
  float x_scale = 1.0f, y_scale = 1.0f;
  int64_t x_zero_point = 0, y_zero_point = 0;
  std::string x_dtype = "uint8", y_dtype = "uint8";
  bool relu = false;  // saturates below at y_zero_point: a ReLU fused
  // > 0 with relu: also saturates above at the quantized clip_max (a ReLU6's
  // 6): quantizing clip(v, 0, M) is clamping v's quantized value between
  // those of 0 and M, rounding being monotone.
  float clip_max = 0.0f;
  // Every channel's x_scale * w_scale / y_scale is 2^-k: requantized by a
  // rounding shift in integers (ops/requantize.h; seed 003's VTA quantization).
  bool power_of_two = false;
  // Blocked, not depthwise: the products centered, sum (x - 128) * max(w, -127)
  // (ir::BytesProduct), the folded bias then bias[f] - (x_zero_point - 128) *
  // sum(w[f]): for weights within +-127 the same sum, which a saturating byte
  // dot product (pmaddubsw) computes exactly where x * w's pairs would not.
  bool centered = false;
  bool is_blocked() const { return conv.data_layout != "NCHW"; }
  Requantization requantization() const {
    return {x_scale, y_scale, y_zero_point, y_dtype, relu, clip_max, power_of_two};
  }
  // Depthwise (groups == channels, one weight channel each): weight (C, 1,
  // KH, KW), blocked as depthwise conv2d's (C/bn, 1, KH, KW, 1, bn) with
  // kernel layout OIHW1i<bn>o. No dot product: each channel sums its window.
  bool is_depthwise() const { return conv.groups > 1; }
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
// The blocked form (x uint8 NCHW<ic_bn>c, w int8 int8_kernel_layout, bias
// folded): the accumulator tagged qlinear_conv2d_nchwc, axes n, oc_chunk, oh,
// ow, oc_block, reduce ic_outer, ry, rx, ic_inner (ic_bn/4), ic_4 (the 4
// bytes of a lane: a byte dot product), then the requantization tagged
// qlinear_conv2d_requantize. An unpadded 1x1 convolution runs over its
// positions flattened, as conv2d_nchwc does (nchwc_flattens_spatial).
ir::Tensor qlinear_conv2d_nchwc(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor& w_scale,
                                const ir::Tensor& bias, const QLinearConv2dAttrs& attrs);
// The blocked depthwise form (x NCHW<bn>c, w (C/bn, 1, KH, KW, 1, bn), bias
// folded): the accumulator tagged qlinear_depthwise_nchwc, axes n, c_chunk,
// oh, ow, c_block, reduce di, dj, then the requantization.
ir::Tensor qlinear_depthwise_conv2d_nchwc(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor& w_scale,
                                          const ir::Tensor& bias, const QLinearConv2dAttrs& attrs);

namespace reference {
// Exact integer sums (int64), the requantization in float in the kernel's order.
void qlinear_conv2d_nchw(const float* x, const Shape& x_shape, const float* w, const Shape& w_shape,
                         const float* w_scale, const float* bias, const QLinearConv2dAttrs& attrs, float* y);
// The blocked forms, through the NCHW one (the bias unfolded).
void qlinear_depthwise_conv2d_nchwc(const float* x, const Shape& x_shape, const float* w, const Shape& w_shape,
                                    const float* w_scale, const float* bias, const QLinearConv2dAttrs& attrs, float* y);
void qlinear_conv2d_nchwc(const float* x, const Shape& x_shape, const float* w, const Shape& w_shape,
                          const float* w_scale, const float* bias, const QLinearConv2dAttrs& attrs, float* y);
}  // namespace reference

}  // namespace tessera::ops
