#pragma once
// Reference implementations: plain nested loops over row-major float arrays,
// written from each operator's definition (never from its tensor expression),
// accumulating in double. Slow on purpose; tests and correctness checks compare
// compiled kernels with these. Shapes are validated as by the declarations.
// Elementwise references may write in place (out == x).
#include <functional>
#include <vector>

#include "ops/common.h"
#include "ops/conv2d.h"
#include "ops/pooling.h"

namespace tessera::ops::reference {

void conv2d_nchw(const float* data, const Shape& data_shape, const float* weight, const Shape& weight_shape,
                 const Conv2dAttrs& attrs, float* out);
void conv2d_nhwc(const float* data, const Shape& data_shape, const float* weight, const Shape& weight_shape,
                 const Conv2dAttrs& attrs, float* out);
// Packed data (N, C/ic_bn, H, W, ic_bn), weight (O/oc_bn, I/ic_bn, KH, KW, ic_bn, oc_bn).
void conv2d_nchwc(const float* data, const Shape& data_shape, const float* weight, const Shape& weight_shape,
                  const Conv2dAttrs& attrs, float* out);
void depthwise_conv2d_nchw(const float* data, const Shape& data_shape, const float* weight,
                           const Shape& weight_shape, const Conv2dAttrs& attrs, float* out);
void depthwise_conv2d_nhwc(const float* data, const Shape& data_shape, const float* weight,
                           const Shape& weight_shape, const Conv2dAttrs& attrs, float* out);

// data (M, K), weight (N, K) -> (M, N)
void dense(const float* data, const float* weight, int64_t m, int64_t n, int64_t k, float* out);
// a (B, M, K), b (B, N, K) -> (B, M, N)
void batch_matmul(const float* a, const float* b, int64_t batch, int64_t m, int64_t n, int64_t k, float* out);

void max_pool2d(const float* data, const Shape& data_shape, const Pool2dAttrs& attrs, float* out);
void avg_pool2d(const float* data, const Shape& data_shape, const Pool2dAttrs& attrs, float* out);
void global_avg_pool2d(const float* data, const Shape& data_shape, float* out);

// Over the last axis.
void softmax(const float* data, const Shape& shape, float* out);

// out = x + bias, bias indexed by x's coordinates along `axes` (see ops::bias_add).
void bias_add(const float* x, const Shape& shape, const float* bias, const std::vector<size_t>& axes, float* out);
// out = f(a, b) with NumPy broadcasting; `op` names the operator in errors.
void broadcast_binary(const float* a, const Shape& a_shape, const float* b, const Shape& b_shape, float* out,
                      const std::function<float(float, float)>& f, const std::string& op);
// NumPy broadcasting.
void add(const float* a, const Shape& a_shape, const float* b, const Shape& b_shape, float* out);
void multiply(const float* a, const Shape& a_shape, const float* b, const Shape& b_shape, float* out);
void relu(const float* x, int64_t size, float* out);
void clip(const float* x, int64_t size, float lo, float hi, float* out);

}  // namespace tessera::ops::reference

// --- Added for the graph interpreter (issue 9) ---
namespace tessera::ops::reference {

// Grouped convolution: input channels and output channels split into `groups`
// equal parts, output group g reading input group g only. Depthwise is groups
// == channels. data NCHW with weight (O, C/groups, KH, KW); or data NHWC with
// weight HWIO (KH, KW, C/groups, O). The output shape validates both.
Shape conv2d_grouped_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& attrs, int64_t groups,
                                  bool nhwc);
void conv2d_grouped_nchw(const float* data, const Shape& data_shape, const float* weight, const Shape& weight_shape,
                         const Conv2dAttrs& attrs, int64_t groups, float* out);
void conv2d_grouped_nhwc(const float* data, const Shape& data_shape, const float* weight, const Shape& weight_shape,
                         const Conv2dAttrs& attrs, int64_t groups, float* out);

// Pooling over NHWC data (N, H, W, C); the same windows as the NCHW ones.
void max_pool2d_nhwc(const float* data, const Shape& data_shape, const Pool2dAttrs& attrs, float* out);
void avg_pool2d_nhwc(const float* data, const Shape& data_shape, const Pool2dAttrs& attrs, float* out);
void global_avg_pool2d_nhwc(const float* data, const Shape& data_shape, float* out);

// 1 / (1 + exp(-x)).
void sigmoid(const float* x, int64_t size, float* out);
// Inference batch norm along `axis`: (x - mean) / sqrt(var + epsilon) * gamma + beta.
void batch_norm(const float* x, const Shape& shape, size_t axis, const float* gamma, const float* beta,
                const float* mean, const float* var, double epsilon, float* out);
// Softmax along any axis.
void softmax(const float* data, const Shape& shape, size_t axis, float* out);
// Inputs of equal shape except along `axis`, joined along it.
void concat(const std::vector<const float*>& inputs, const std::vector<Shape>& shapes, size_t axis, float* out);
// out axis i = data axis perm[i].
void transpose(const float* data, const Shape& shape, const std::vector<int64_t>& perm, float* out);
// Constant padding: out[i] = data[i - before] inside the data, else value.
void pad(const float* data, const Shape& shape, const Shape& before, const Shape& after, float value, float* out);

}  // namespace tessera::ops::reference
