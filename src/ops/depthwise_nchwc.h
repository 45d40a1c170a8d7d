#pragma once
// Depthwise convolution in the blocked NCHW[x]c layout (TVM's
// depthwise_conv2d_NCHWc, channel multiplier 1):
//   data   (N, C/bn, H, W, bn)
//   weight (C/bn, 1, KH, KW, 1, bn)
//   output (N, C/bn, OH, OW, bn)
// so that bn channels of one pixel are one contiguous vector in all three.
#include <vector>

#include "ir/tensor.h"
#include "ops/common.h"
#include "ops/conv2d.h"

namespace tessera::ops {

Shape depthwise_conv2d_nchwc_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& attrs);

// Stages: [data_pad] -> DepthwiseConv2d_NCHWc(n, c_chunk, oh, ow, c_block),
// reduce di, dj. Tag "depthwise_conv2d_nchwc"; attrs carry "bn".
ir::Tensor depthwise_conv2d_nchwc(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& attrs);

// (C, 1, KH, KW) -> (C/bn, 1, KH, KW, 1, bn) and its shape; throws unless bn
// divides C and the multiplier is 1.
Shape depthwise_nchwc_weight_shape(const Shape& weight, int64_t bn);
std::vector<float> pack_depthwise_weight(const float* weight, const Shape& shape, int64_t bn);
// The packed weight (C/bn, 1, KH, KW, 1, bn) back to (C, 1, KH, KW).
std::vector<float> unpack_depthwise_weight(const float* packed, const Shape& packed_shape);

namespace reference {
// Packed data and weight as above; unpacks, runs the NCHW reference, packs the
// result.
void depthwise_conv2d_nchwc(const float* data, const Shape& data_shape, const float* weight, const Shape& weight_shape,
                            const Conv2dAttrs& attrs, float* out);
}  // namespace reference

}  // namespace tessera::ops
