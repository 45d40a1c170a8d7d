#include "ops/workloads.h"

#include <algorithm>

#include "ops/conv2d_implicit_gemm.h"
#include "ops/dense.h"
#include "ops/depthwise_nchwc.h"
#include "ops/elementwise.h"
#include "ops/layout.h"
#include "ops/reference.h"
#include "ops/softmax.h"
#include "ops/winograd.h"

namespace tessera::ops {

namespace {

// Finishes a workload: appends the epilogue stages to `core` (bias along
// `bias_axes` of the output, then relu), builds the DAG and composes the
// references in the same order.
Workload finish(const std::string& op, ir::Tensor core, std::vector<ir::Tensor> inputs, Reference core_ref,
                const Epilogue& e = {}, const std::vector<size_t>& bias_axes = {1}) {
  const Shape out_shape = core->shape;
  ir::Tensor out = core;
  if (e.bias) {
    Shape bias_shape;
    for (size_t axis : bias_axes) bias_shape.push_back(out_shape[axis]);
    ir::Tensor bias = ir::placeholder(bias_shape, "bias");
    inputs.push_back(bias);
    out = bias_add(out, bias, bias_axes);
  }
  if (e.relu) out = relu(out);
  ir::ComputeDAG dag({out});
  const size_t bias_input = inputs.size() - 1;
  Reference ref = [=](const std::vector<const float*>& in, float* o) {
    core_ref(in, o);
    if (e.bias) reference::bias_add(o, out_shape, in[bias_input], bias_axes, o);
    if (e.relu) reference::relu(o, num_elements(out_shape), o);
  };
  return Workload{op, dag, bind_reference(dag, inputs, ref)};
}

using ConvDecl = ir::Tensor (*)(const ir::Tensor&, const ir::Tensor&, const Conv2dAttrs&);
using ConvRef = void (*)(const float*, const Shape&, const float*, const Shape&, const Conv2dAttrs&, float*);

Workload conv_workload(const std::string& op, ConvDecl declare, ConvRef ref, const Shape& data_shape,
                       const Shape& kernel_shape, const Conv2dAttrs& attrs, const Epilogue& e,
                       const std::vector<size_t>& bias_axes) {
  ir::Tensor data = ir::placeholder(data_shape, "data");
  ir::Tensor kernel = ir::placeholder(kernel_shape, "kernel");
  ir::Tensor out = declare(data, kernel, attrs);
  auto core_ref = [=](const std::vector<const float*>& in, float* o) {
    ref(in[0], data_shape, in[1], kernel_shape, attrs, o);
  };
  return finish(op, out, {data, kernel}, core_ref, e, bias_axes);
}

}  // namespace

Workload conv2d_nchw_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs, Epilogue e) {
  return conv_workload("conv2d_nchw", conv2d_nchw, reference::conv2d_nchw, data, kernel, attrs, e, {1});
}

Workload conv2d_nchw_implicit_gemm_workload(const Shape& data_shape, const Shape& oihw, const Conv2dAttrs& attrs,
                                            Epilogue e) {
  // The kernel reads its weight as a build stores it (OHWI); the reference convolves it OIHW.
  const Shape ohwi = implicit_gemm_weight_shape(oihw);
  ir::Tensor data = ir::placeholder(data_shape, "data");
  ir::Tensor kernel = ir::placeholder(ohwi, "kernel");
  ir::Tensor out = conv2d_nchw_implicit_gemm(data, kernel, attrs);
  auto core_ref = [=](const std::vector<const float*>& in, float* o) {
    const std::vector<float> weight = oihw_of_implicit_gemm_weight(in[1], ohwi);
    reference::conv2d_nchw(in[0], data_shape, weight.data(), oihw, attrs, o);
  };
  return finish("conv2d_nchw_implicit_gemm", out, {data, kernel}, core_ref, e, {1});
}

Workload conv2d_nhwc_implicit_gemm_workload(const Shape& data, const Shape& hwio_kernel, const Conv2dAttrs& attrs,
                                            Epilogue e) {
  return conv_workload("conv2d_nhwc_implicit_gemm", conv2d_nhwc_implicit_gemm, reference::conv2d_nhwc, data,
                       hwio_kernel, attrs, e, {3});
}

Workload group_conv2d_nchw_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs, Epilogue e) {
  const auto reference = [](const float* x, const Shape& xs, const float* w, const Shape& ws, const Conv2dAttrs& a,
                            float* y) { reference::conv2d_grouped_nchw(x, xs, w, ws, a, a.groups, y); };
  return conv_workload("group_conv2d_nchw", group_conv2d_nchw, reference, data, kernel, attrs, e, {1});
}

Workload conv2d_nhwc_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs, Epilogue e) {
  return conv_workload("conv2d_nhwc", conv2d_nhwc, reference::conv2d_nhwc, data, kernel, attrs, e, {3});
}

Workload conv2d_nchwc_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs, Epilogue e) {
  return conv_workload("conv2d_nchwc", conv2d_nchwc, reference::conv2d_nchwc, data, kernel, attrs, e, {1, 4});
}

Workload conv2d_winograd_nchwc_workload(const Shape& data_shape, const Shape& kernel_shape, const Conv2dAttrs& attrs,
                                        int64_t m, Epilogue e) {
  ir::Tensor data = ir::placeholder(data_shape, "data");
  ir::Tensor kernel = ir::placeholder(kernel_shape, "kernel");
  ir::Tensor out = conv2d_winograd_nchwc(data, kernel, attrs, m);
  auto core_ref = [=](const std::vector<const float*>& in, float* o) {
    reference::conv2d_winograd_nchwc(in[0], data_shape, in[1], kernel_shape, attrs, m, o);
  };
  return finish("conv2d_winograd_nchwc", out, {data, kernel}, core_ref, e, {1, 4});
}

Workload conv2d_winograd_nchw_workload(const Shape& data_shape, const Shape& kernel_shape, const Conv2dAttrs& attrs,
                                       int64_t m, Epilogue e) {
  ir::Tensor data = ir::placeholder(data_shape, "data");
  ir::Tensor kernel = ir::placeholder(kernel_shape, "kernel");
  ir::Tensor out = conv2d_winograd_nchw(data, kernel, attrs, m);
  auto core_ref = [=](const std::vector<const float*>& in, float* o) {
    reference::conv2d_winograd_nchw(in[0], data_shape, in[1], kernel_shape, attrs, m, o);
  };
  return finish("conv2d_winograd_nchw", out, {data, kernel}, core_ref, e, {1});
}

Workload depthwise_conv2d_nchw_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs,
                                        Epilogue e) {
  return conv_workload("depthwise_conv2d_nchw", depthwise_conv2d_nchw, reference::depthwise_conv2d_nchw, data,
                       kernel, attrs, e, {1});
}

Workload depthwise_conv2d_nhwc_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs,
                                        Epilogue e) {
  return conv_workload("depthwise_conv2d_nhwc", depthwise_conv2d_nhwc, reference::depthwise_conv2d_nhwc, data,
                       kernel, attrs, e, {3});
}

Workload depthwise_conv2d_nchwc_workload(const Shape& data, const Shape& kernel, const Conv2dAttrs& attrs,
                                         Epilogue e) {
  return conv_workload("depthwise_conv2d_nchwc", depthwise_conv2d_nchwc, reference::depthwise_conv2d_nchwc, data,
                       kernel, attrs, e, {1, 4});
}

Workload dense_workload(const Shape& data_shape, const Shape& weight_shape, Epilogue e) {
  ir::Tensor data = ir::placeholder(data_shape, "data");
  ir::Tensor weight = ir::placeholder(weight_shape, "weight");
  ir::Tensor out = dense(data, weight);
  const int64_t m = data_shape[0], k = data_shape[1], n = weight_shape[0];
  auto ref = [=](const std::vector<const float*>& in, float* o) { reference::dense(in[0], in[1], m, n, k, o); };
  return finish("dense", out, {data, weight}, ref, e, {1});
}

Workload dense_pack_workload(const Shape& data_shape, const Shape& weight_shape, Epilogue e) {
  ir::Tensor data = ir::placeholder(data_shape, "data");
  ir::Tensor weight = ir::placeholder(weight_shape, "weight");
  ir::Tensor out = dense_pack(data, weight);
  const int64_t m = data_shape[0], k = data_shape[1], bn = weight_shape[2], n = weight_shape[0] * bn;
  auto ref = [=](const std::vector<const float*>& in, float* o) {
    std::vector<float> unpacked(n * k);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t kk = 0; kk < k; ++kk) unpacked[j * k + kk] = in[1][((j / bn) * k + kk) * bn + j % bn];
    reference::dense(in[0], unpacked.data(), m, n, k, o);
  };
  return finish("dense_pack", out, {data, weight}, ref, e, {1});
}

Workload batch_matmul_workload(const Shape& a_shape, const Shape& b_shape) {
  ir::Tensor a = ir::placeholder(a_shape, "A");
  ir::Tensor b = ir::placeholder(b_shape, "B");
  ir::Tensor out = batch_matmul(a, b);
  auto ref = [=](const std::vector<const float*>& in, float* o) {
    reference::batch_matmul(in[0], in[1], a_shape[0], a_shape[1], b_shape[1], a_shape[2], o);
  };
  return finish("batch_matmul", out, {a, b}, ref);
}

Workload max_pool2d_workload(const Shape& data_shape, const Pool2dAttrs& attrs) {
  ir::Tensor data = ir::placeholder(data_shape, "data");
  auto ref = [=](const std::vector<const float*>& in, float* o) {
    reference::max_pool2d(in[0], data_shape, attrs, o);
  };
  return finish("max_pool2d", max_pool2d(data, attrs), {data}, ref);
}

Workload avg_pool2d_workload(const Shape& data_shape, const Pool2dAttrs& attrs) {
  ir::Tensor data = ir::placeholder(data_shape, "data");
  auto ref = [=](const std::vector<const float*>& in, float* o) {
    reference::avg_pool2d(in[0], data_shape, attrs, o);
  };
  return finish("avg_pool2d", avg_pool2d(data, attrs), {data}, ref);
}

Workload global_avg_pool2d_workload(const Shape& data_shape) {
  ir::Tensor data = ir::placeholder(data_shape, "data");
  auto ref = [=](const std::vector<const float*>& in, float* o) {
    reference::global_avg_pool2d(in[0], data_shape, o);
  };
  return finish("global_avg_pool2d", global_avg_pool2d(data), {data}, ref);
}

Workload global_avg_pool2d_nchwc_workload(const Shape& packed_shape) {
  ir::Tensor data = ir::placeholder(packed_shape, "data");
  auto ref = [=](const std::vector<const float*>& in, float* o) {
    const std::vector<float> nchw = unpack_nchwc_to_nchw(in[0], packed_shape);
    const Shape plain = {packed_shape[0], packed_shape[1] * packed_shape[4], packed_shape[2], packed_shape[3]};
    std::vector<float> pooled(static_cast<size_t>(plain[0] * plain[1]));
    reference::global_avg_pool2d(nchw.data(), plain, pooled.data());
    const std::vector<float> packed = pack_nchw_to_nchwc(pooled.data(), {plain[0], plain[1], 1, 1}, packed_shape[4]);
    std::copy(packed.begin(), packed.end(), o);
  };
  return finish("global_avg_pool2d", global_avg_pool2d(data), {data}, ref);
}

Workload softmax_workload(const Shape& data_shape) {
  ir::Tensor data = ir::placeholder(data_shape, "data");
  auto ref = [=](const std::vector<const float*>& in, float* o) { reference::softmax(in[0], data_shape, o); };
  return finish("softmax", softmax(data), {data}, ref);
}

Workload relu_workload(const Shape& data_shape) {
  ir::Tensor data = ir::placeholder(data_shape, "data");
  const int64_t size = num_elements(data_shape);
  auto ref = [=](const std::vector<const float*>& in, float* o) { reference::relu(in[0], size, o); };
  return finish("relu", relu(data), {data}, ref);
}

Workload clip_workload(const Shape& data_shape, float lo, float hi) {
  ir::Tensor data = ir::placeholder(data_shape, "data");
  const int64_t size = num_elements(data_shape);
  auto ref = [=](const std::vector<const float*>& in, float* o) { reference::clip(in[0], size, lo, hi, o); };
  return finish("clip", clip(data, lo, hi), {data}, ref);
}

Workload add_workload(const Shape& a_shape, const Shape& b_shape) {
  ir::Tensor a = ir::placeholder(a_shape, "lhs");
  ir::Tensor b = ir::placeholder(b_shape, "rhs");
  auto ref = [=](const std::vector<const float*>& in, float* o) {
    reference::add(in[0], a_shape, in[1], b_shape, o);
  };
  return finish("add", add(a, b), {a, b}, ref);
}

Workload multiply_workload(const Shape& a_shape, const Shape& b_shape) {
  ir::Tensor a = ir::placeholder(a_shape, "lhs");
  ir::Tensor b = ir::placeholder(b_shape, "rhs");
  auto ref = [=](const std::vector<const float*>& in, float* o) {
    reference::multiply(in[0], a_shape, in[1], b_shape, o);
  };
  return finish("multiply", multiply(a, b), {a, b}, ref);
}

Workload bias_add_workload(const Shape& data_shape, size_t axis) {
  if (axis >= data_shape.size())
    fail("bias_add", "axis " + std::to_string(axis) + " is out of range for data " + shape_to_string(data_shape));
  ir::Tensor data = ir::placeholder(data_shape, "data");
  ir::Tensor bias = ir::placeholder({data_shape[axis]}, "bias");
  auto ref = [=](const std::vector<const float*>& in, float* o) {
    reference::bias_add(in[0], data_shape, in[1], {axis}, o);
  };
  return finish("bias_add", bias_add(data, bias, axis), {data, bias}, ref);
}

}  // namespace tessera::ops
