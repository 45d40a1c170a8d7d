#pragma once
// A 2-D convolution computed as one matrix product, the form tensor cores
// run (autoschedule/gpu_sketch_rules.h, TensorCoreTiling). In NCHW:
//
//   weights  (F', K')  weights[f, k]  = weight[f, ry, rx, c]        k = (ry, rx, c)
//   columns  (K', Q')  columns[k, q]  = padded data[n, c, y*s + ry*d, x*s + rx*d]   q = (n, y, x)
//   product  (F', Q')  = weights x columns, reduced over k
//   output   (N, F, OH, OW) = product[f, (n * OH + y) * OW + x]
//
// with F = output channels, K = KH * KW * C, Q = N * OH * OW, each rounded
// up to a multiple of 16 (F', K', Q'; the rows and columns past the
// convolution's are zeros, so every 16 x 16 x 16 tile is whole). The weights
// and columns are views: a schedule reads them through (the columns are the
// im2col matrix, never stored whole: "implicit").
//
// The weight is stored OHWI (a build stores the graph's OIHW constant so:
// ops::Operator::stored_constant), and the reduction runs over the channels
// innermost, so a weight row is k in order, and a step of the reduction
// whose depth divides the channels (ResNet's: 32 of 64 and more) has one
// tap (ry, rx): its columns' window check is the step's, not each
// element's, and each element's index is an offset linear in its channel.
// In (c, ry, rx) order, each element of the im2col operand had its own
// divisions by KH * KW and KW, most of the instructions of a tensor-core
// kernel's inner loop (bench/gpu/sass_census.py).
#include <vector>

#include "ir/tensor.h"
#include "ops/conv2d.h"

namespace tessera::ops {

// In NHWC the product is the transpose, positions by channels, so that
// both operands' rows are contiguous in memory (the form tensor-core GEMMs
// on NHWC tensors take):
//
//   columns  (Q', K')  columns[q, k]  = padded data[n, y*s + ry*d, x*s + rx*d, c]
//   weights  (K', F')  weights[k, f]  = weight[ry, rx, c, f]   (HWIO, the graph's: a view, nothing stored)
//   product  (Q', F')  output (N, OH, OW, F) = product[(n * OH + y) * OW + x, f]
//
// A step's 8 consecutive k (C a multiple of 8) are one tap's 8 channels:
// 16 contiguous bytes of a pixel in half, under one padding check, which a
// fetch copies as one vector (codegen/gpu_source.h).
//
// Stages: [pad_temp] -> conv_weights, conv_columns (views) -> conv_product
// (tag "conv2d_nchw_gemm") -> the output (tag "conv2d_nchw_implicit_gemm",
// attrs those of the convolution and "implicit_gemm"). Ungrouped only;
// `ohwi_weight` (O, KH, KW, I).
ir::Tensor conv2d_nchw_implicit_gemm(const ir::Tensor& data, const ir::Tensor& ohwi_weight, const Conv2dAttrs& attrs);
// The same in NHWC: data (N, H, W, C), `hwio_weight` (KH, KW, C, F); the
// product tagged "conv2d_nhwc_gemm", the output "conv2d_nhwc_implicit_gemm".
ir::Tensor conv2d_nhwc_implicit_gemm(const ir::Tensor& data, const ir::Tensor& hwio_weight, const Conv2dAttrs& attrs);

// The stored weight: (O, KH, KW, I) of an OIHW shape, its values
// transposed so; and back (a reference convolves OIHW).
Shape implicit_gemm_weight_shape(const Shape& oihw);
std::vector<float> implicit_gemm_weight(const float* oihw, const Shape& oihw_shape);
std::vector<float> oihw_of_implicit_gemm_weight(const float* ohwi, const Shape& ohwi_shape);

}  // namespace tessera::ops
