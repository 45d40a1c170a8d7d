#pragma once
// A 2-D convolution in NCHW computed as one matrix product, the form tensor
// cores run (autoschedule/gpu_sketch_rules.h, TensorCoreTiling):
//
//   weights  (F', K')  weights[f, k]  = weight[f, c, ry, rx]        k = (c, ry, rx)
//   columns  (K', Q')  columns[k, q]  = padded data[n, c, y*s + ry*d, x*s + rx*d]   q = (n, y, x)
//   product  (F', Q')  = weights x columns, reduced over k
//   output   (N, F, OH, OW) = product[f, (n * OH + y) * OW + x]
//
// with F = output channels, K = C * KH * KW, Q = N * OH * OW, each rounded
// up to a multiple of 16 (F', K', Q'; the rows and columns past the
// convolution's are zeros, so every 16 x 16 x 16 tile is whole). The weights
// and columns are views: a schedule reads them through (the columns are the
// im2col matrix, never stored whole: "implicit").
#include "ir/tensor.h"
#include "ops/conv2d.h"

namespace tessera::ops {

// Stages: [pad_temp] -> conv_weights, conv_columns (views) -> conv_product
// (tag "conv2d_nchw_gemm") -> the output (tag "conv2d_nchw_implicit_gemm",
// attrs those of the convolution and "implicit_gemm"). Ungrouped only.
ir::Tensor conv2d_nchw_implicit_gemm(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& attrs);

}  // namespace tessera::ops
