#pragma once
// Workload builders: an operator instance (shapes and attributes) as a compute
// DAG with its reference. Convolutions and dense take an optional epilogue
// (bias_add then relu) that is fused into the same DAG and applied by the
// reference after the operator's own reference.
#include <vector>

#include "ops/common.h"
#include "ops/conv2d.h"
#include "ops/pooling.h"
#include "ops/workload.h"

namespace tessera::ops {

struct Epilogue {
  bool bias = false;  // adds a placeholder "bias" with one value per output channel
  bool relu = false;
};

// Shapes are those of the placeholders, in the operator's own layout.
// Placeholders are named data, kernel (weight for dense), bias.
Workload conv2d_nchw_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs, Epilogue e = {});
// Grouped (attrs.groups): kernel (O, C/groups, KH, KW).
Workload group_conv2d_nchw_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs, Epilogue e = {});
// The same convolution computed as one matrix product (ops/conv2d_implicit_gemm.h):
// given the OIHW shape, the kernel placeholder is (O, KH, KW, I), as a build stores it.
Workload conv2d_nchw_implicit_gemm_workload(const Shape& data, const Shape& oihw_kernel, const Conv2dAttrs& attrs,
                                            Epilogue e = {});
// data (N, H, W, C), kernel HWIO, read as it is (ops/conv2d_implicit_gemm.h).
Workload conv2d_nhwc_implicit_gemm_workload(const Shape& data, const Shape& hwio_kernel, const Conv2dAttrs& attrs,
                                            Epilogue e = {});
Workload conv2d_nhwc_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs, Epilogue e = {});
// data (N, C/ic_bn, H, W, ic_bn), kernel (O/oc_bn, I/groups/ic_bn, KH, KW, ic_bn, oc_bn);
// the bias is (O/oc_bn, oc_bn), which has the same memory layout as a flat (O).
Workload conv2d_nchwc_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs, Epilogue e = {});
// data (N, C/ic_bn, H, W, ic_bn), kernel transformed for tile m
// (ops/winograd.h); the bias is (O/oc_bn, oc_bn).
Workload conv2d_winograd_nchwc_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs, int64_t m,
                                        Epilogue e = {});
// The NCHW form (GPU targets): the kernel (alpha^2, O, C), the bias (O).
Workload conv2d_winograd_nchw_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs, int64_t m,
                                       Epilogue e = {});
Workload depthwise_conv2d_nchw_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs,
                                        Epilogue e = {});
// data (N, H, W, C), kernel (KH, KW, 1, C * multiplier); the bias is (C * multiplier).
Workload depthwise_conv2d_nhwc_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs,
                                        Epilogue e = {});
// data (N, C/bn, H, W, bn), kernel (C/bn, 1, KH, KW, 1, bn) (ops/depthwise_nchwc.h);
// the bias is (C/bn, bn).
Workload depthwise_conv2d_nchwc_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs,
                                         Epilogue e = {});
Workload dense_workload(const Shape& data, const Shape& weight, Epilogue e = {});
// data (M, K), weight packed (N/bn, K, bn); the reference unpacks it.
Workload dense_pack_workload(const Shape& data, const Shape& packed_weight, Epilogue e = {});
Workload batch_matmul_workload(const Shape& a, const Shape& b);
Workload max_pool2d_workload(const Shape& data, const Pool2dAttrs& attrs);
Workload avg_pool2d_workload(const Shape& data, const Pool2dAttrs& attrs);
Workload global_avg_pool2d_workload(const Shape& data);
// Data packed NCHW[x]c: (N, C/b, H, W, b); output (N, C/b, 1, 1, b).
Workload global_avg_pool2d_nchwc_workload(const Shape& packed_data);
Workload softmax_workload(const Shape& data);
Workload relu_workload(const Shape& data);
Workload clip_workload(const Shape& data, float lo, float hi);
Workload add_workload(const Shape& a, const Shape& b);
Workload multiply_workload(const Shape& a, const Shape& b);
// bias of shape (data[axis]) added along `axis`.
Workload bias_add_workload(const Shape& data, size_t axis = 1);

}  // namespace tessera::ops
