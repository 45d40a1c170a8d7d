#pragma once
// 3x3 stride-1 convolution by Winograd's minimal filtering F(m x m, 3 x 3)
// (Lavin & Gray 2016), in the blocked NCHW[x]c layout CPUs run and in the
// NCHW layout GPUs run (at the end of this file). Each m x m output tile
// is computed from an (m+2) x (m+2) input tile with alpha^2 = (m+2)^2
// multiplications per channel pair instead of 9 m^2: 2.25x fewer for m = 2,
// 4x for m = 4, paid for by transforms that are linear in the channels.
//
//   data    (N, IC/ib, H, W, ib)
//   weight  (alpha^2, OC/ob, IC/ib, ib, ob)   G g G^T of each 3x3 kernel,
//                                             transformed once, ahead of time
//   output  (N, OC/ob, OH, OW, ob)
//
// Stages: data_pad (zeros up to whole tiles) -> winograd_data_pack V =
// B^T d B (alpha^2, IC/ib, tiles, ib) -> winograd_bgemm M (alpha^2, OC/ob,
// tiles, ob), a batch of alpha^2 matrix products reduced over the input
// channels -> winograd_inverse Y = A^T M A, the convolution's output.
// The transforms are written out term by term (their matrices are constant
// and sparse) under selects that unrolling the transform's loops resolves.
#include <vector>

#include "ir/tensor.h"
#include "ops/common.h"
#include "ops/conv2d.h"

namespace tessera::ops {

// Output tile sizes with transform matrices: 2 and 4.
bool winograd_tile_supported(int64_t m);
// Whether a convolution (NCHW data, OIHW weight shapes) can run as Winograd:
// 3x3 kernel, stride 1, dilation 1, one group.
bool winograd_applies(const Shape& weight, const Conv2dAttrs& attrs);

// The transformed weight's shape for an OIHW weight with blocks ib, ob.
Shape winograd_weight_shape(const Shape& oihw, int64_t ib, int64_t ob, int64_t m);
// U = G g G^T of each kernel, from a weight packed as (O/ob, I/ib, 3, 3, ib, ob)
// (pack_oihw_to_oihwio) into the layout above.
std::vector<float> winograd_transform_weight(const float* packed, const Shape& packed_shape, int64_t m);

Shape conv2d_winograd_nchwc_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& attrs, int64_t m);

// Tag of the output stage "conv2d_winograd_nchwc"; attrs carry "tile" (m),
// "ic_bn" and "oc_bn". The inner stages are tagged winograd_data_pack and
// winograd_bgemm.
ir::Tensor conv2d_winograd_nchwc(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& attrs, int64_t m);

// NCHW (GPU targets):
//
//   data    (N, C, H, W)
//   weight  (alpha^2, O, C)      G g G^T of each 3x3 kernel, ahead of time
//   output  (N, O, OH, OW)
//
// Stages: data_pad -> winograd_data_pack V (alpha^2, C, tiles), kept whole
// (attribute kept_whole: each tile transformed once, not per output channel)
// -> winograd_bgemm M (alpha^2, O, tiles) = U . V, a batch of alpha^2 matrix
// products with the tiles as columns -> the output tagged
// conv2d_winograd_nchw (attribute "tile": m), Y = A^T M A.
Shape winograd_nchw_weight_shape(const Shape& oihw, int64_t m);
std::vector<float> winograd_transform_nchw_weight(const float* oihw, const Shape& oihw_shape, int64_t m);
Shape conv2d_winograd_nchw_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& attrs, int64_t m);
ir::Tensor conv2d_winograd_nchw(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& attrs, int64_t m);

namespace reference {
// The same algorithm in plain loops: transform each input tile, multiply with
// the transformed weight summing over input channels, transform back. Tested
// against the direct convolution's reference.
void conv2d_winograd_nchwc(const float* data, const Shape& data_shape, const float* weight, const Shape& weight_shape,
                           const Conv2dAttrs& attrs, int64_t m, float* out);
// The NCHW form: the blocked algorithm with blocks of one.
void conv2d_winograd_nchw(const float* data, const Shape& data_shape, const float* weight, const Shape& weight_shape,
                          const Conv2dAttrs& attrs, int64_t m, float* out);
}  // namespace reference

}  // namespace tessera::ops
