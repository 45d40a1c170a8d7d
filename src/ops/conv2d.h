#pragma once
// 2-D convolutions as tensor expressions, in the layouts the schedules know:
//   conv2d_nchw            data (N, C, H, W),            weight OIHW (O, I, KH, KW)
//   conv2d_nhwc            data (N, H, W, C),            weight HWIO (KH, KW, I, O)
//   conv2d_nchwc           data (N, C/ic_bn, H, W, ic_bn), weight (O/oc_bn, I/ic_bn, KH, KW, ic_bn, oc_bn)
//   depthwise_conv2d_nchw  data (N, C, H, W),            weight (C, multiplier, KH, KW)
//   depthwise_conv2d_nhwc  data (N, H, W, C),            weight HWIO (KH, KW, 1, C * multiplier)
// Non-zero padding adds a separate padding stage before the convolution.
#include <map>
#include <string>
#include <utility>

#include "ir/tensor.h"
#include "ops/common.h"

namespace tessera::ops {

// The attributes of conv2d: one struct for graph nodes, the interpreter,
// compile and the compute declarations below (which read the stride,
// padding and dilation; their layout is in their name).
struct Conv2dAttrs {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;  // depthwise when groups == input channels
  // Data NCHW, NHWC, or blocked NCHW<b>c (convert_layout); kernel OIHW, HWIO
  // (with NHWC), or OIHW<i>i<o>o (with NCHW<b>c).
  std::string data_layout = "NCHW";
  std::string kernel_layout = "OIHW";
  // A blocked 3x3 stride-1 convolution computed by Winograd's F(m x m, 3 x 3)
  // with this output tile m (ops/winograd.h); 0: directly. The graph's
  // weight stays OIHW<i>i<o>o; compile transforms it.
  int64_t winograd_tile = 0;
  // An ungrouped NCHW convolution computed as one matrix product (ops/
  // conv2d_implicit_gemm.h), which tensor cores run: a CUDA network chooses
  // it (build::implicit_gemm_of).
  bool implicit_gemm = false;

  // The same stride, padding and dilation on both axes and all sides.
  static Conv2dAttrs symmetric(int64_t stride, int64_t pad, int64_t dilation = 1, int64_t groups = 1);
  bool has_padding() const { return pad_top || pad_left || pad_bottom || pad_right; }
  // Throws unless strides and dilations are positive and paddings non-negative.
  void validate(const std::string& op) const;
  // Recorded in the output tensor's attrs, e.g. {"strides": "2,2", "padding": "1,1,1,1", ...}:
  // part of workload keys, so it names only what the declaration reads.
  std::map<std::string, std::string> to_attrs() const;
  // "strides=[2, 2] padding=[1, 1, 1, 1] dilation=[1, 1] groups=1 data_layout=NCHW ..."
  std::string to_string() const;
};

// Convolutions in the blocked layouts convert_layout gives them: data
// NCHW<b>c, weight OIHW<i>i<o>o (O/o, I/i, KH, KW, i, o), output NCHW<o>c.
// Shape inference and the reference treat them as the same convolution in
// NCHW / OIHW with the layouts converted around it.
bool is_blocked_conv(const Conv2dAttrs& attrs);
// The attrs of the same convolution in NCHW / OIHW, and the output layout.
Conv2dAttrs unblocked_attrs(const Conv2dAttrs& attrs);
std::string blocked_output_layout(const Conv2dAttrs& attrs);
// The input channels of conv2d data of this shape in the attrs' layout.
int64_t conv2d_input_channels(const Conv2dAttrs& attrs, const Shape& data);
// Whether a convolution of data of this shape is depthwise: groups equal to
// its input channels (each output channel reads one input channel).
bool is_depthwise_conv2d(const Conv2dAttrs& attrs, const Shape& data);

// Building blocks shared by the convolution layouts (and other windowed
// operators in their own files):
// Spatial output extents (OH, OW) of a kh x kw window over h x w; validates the attrs.
std::pair<int64_t, int64_t> spatial_output(const std::string& op, int64_t h, int64_t w, int64_t kh, int64_t kw,
                                           const Conv2dAttrs& attrs);
// Pads the two spatial dimensions (h_dim, w_dim) of data when the attrs ask
// for it, with `value` (a quantized input: its zero point).
ir::Tensor pad_spatial(const ir::Tensor& data, size_t h_dim, size_t w_dim, const Conv2dAttrs& attrs,
                       const std::string& name, float value = 0.0f);
// The ranks of a convolution's data and weight (each description names
// the axes, e.g. "data (N, C, H, W)") and that every dimension is positive.
void check_conv_operands(const std::string& op, const std::string& data_what, const Shape& data, size_t data_rank,
                         const std::string& weight_what, const Shape& weight, size_t weight_rank);
// Input row (or column) read by output position `out` and kernel tap `tap`.
ir::Expr window_index(const ir::Expr& out, const ir::Expr& tap, int64_t stride, int64_t dilation);

// Output shapes; they also validate the shapes against each other and throw
// tessera::Error naming the offending argument.
Shape conv2d_nchw_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& attrs);
Shape conv2d_nhwc_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& attrs);
// Whether conv2d_nchwc declares a kernel of this (packed) weight shape over
// flattened output positions: a 1x1 window without padding reads no
// neighbours, so the register tiles can run along whole images instead of
// rows of 7 * 2^k, which few tiles divide.
bool nchwc_flattens_spatial(const Shape& weight, const Conv2dAttrs& attrs);
Shape conv2d_nchwc_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& attrs);
Shape depthwise_conv2d_nchw_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& attrs);
Shape depthwise_conv2d_nhwc_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& attrs);

// Stages: [pad_temp] -> conv2d_nchw(nn, ff, yy, xx), reduce rc, ry, rx. Tag "conv2d_nchw".
ir::Tensor conv2d_nchw(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& attrs);
// Grouped (attrs.groups): weight (O, C/groups, KH, KW); output channel ff
// reads the input channels of its group. Tag "group_conv2d_nchw".
ir::Tensor group_conv2d_nchw(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& attrs);
// Stages: [PaddedInput] -> Conv2dOutput(nn, yy, xx, ff), reduce ry, rx, rc. Tag "conv2d_nhwc".
ir::Tensor conv2d_nhwc(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& attrs);
// Stages: [data_pad] -> conv2d_NCHWc(n, oc_chunk, oh, ow, oc_block), reduce ic_outer, ry, rx,
// ic_inner. Tag "conv2d_nchwc"; attrs carry "ic_bn" and "oc_bn" (and "groups" when grouped).
// Grouped (attrs.groups > 1): the weight is (O/oc_bn, I/groups/ic_bn, KH, KW, ic_bn, oc_bn),
// the blocks dividing a group's channels, and output chunk oc_chunk reads
// the input chunks of its group only; the schedules are the same.
// An unpadded 1x1 convolution is declared over its output positions flattened
// (see nchwc_flattens_spatial): shape (N, O/oc_bn, 1, OH*OW, oc_bn), axes
// n, oc_chunk, oh (extent 1), ohw, oc_block; the same memory as the 5-D output.
ir::Tensor conv2d_nchwc(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& attrs);
// Stages: [PaddedInput] -> DepthwiseConv2d(b, c, i, j), reduce di, dj; output channel
// c reads input channel c / multiplier. Tag "depthwise_conv2d_nchw".
ir::Tensor depthwise_conv2d_nchw(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& attrs);
// Stages: [PaddedInput] -> DepthwiseConv2d(b, i, j, c), reduce di, dj; the
// same with channels last (the NHWC network kept in its layout). Tag
// "depthwise_conv2d_nhwc".
ir::Tensor depthwise_conv2d_nhwc(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& attrs);

}  // namespace tessera::ops
