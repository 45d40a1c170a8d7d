#include "build/node_expression.h"

#include <cstring>

#include "graph/layout.h"
#include "ops/conv2d.h"
#include "ops/dense.h"
#include "ops/depthwise_nchwc.h"
#include "ops/elementwise.h"
#include "ops/pad.h"
#include "ops/pooling.h"
#include "ops/softmax.h"
#include "ops/transform.h"
#include "ops/winograd_nchwc.h"
#include "tessera/error.h"

namespace tessera::build {
namespace {

using graph::Node;
using graph::Op;

[[noreturn]] void unsupported(const Node& n, const std::string& why) {
  throw Error(n.describe() + ": " + why + " is not supported by the build yet");
}

ops::Conv2dAttrs conv_attrs(const graph::Conv2dAttrs& a) {
  ops::Conv2dAttrs c;
  c.stride_h = a.stride_h, c.stride_w = a.stride_w;
  c.pad_top = a.pad_top, c.pad_left = a.pad_left, c.pad_bottom = a.pad_bottom, c.pad_right = a.pad_right;
  c.dilation_h = a.dilation_h, c.dilation_w = a.dilation_w;
  return c;
}

ir::Tensor conv2d(const graph::Graph& g, const Node& n, const std::vector<ir::Tensor>& in) {
  const auto& a = n.attrs_as<graph::Conv2dAttrs>();
  const bool depthwise = graph::is_depthwise(g, n);
  const ops::Conv2dAttrs c = conv_attrs(a);
  if (a.groups != 1 && !depthwise) {
    if (a.data_layout != "NCHW") unsupported(n, "a grouped convolution in " + a.data_layout);
    return ops::group_conv2d_nchw(in[0], in[1], c, a.groups);
  }
  if (a.data_layout == "NCHW") {
    return depthwise ? ops::depthwise_conv2d_nchw(in[0], in[1], c) : ops::conv2d_nchw(in[0], in[1], c);
  }
  if (a.data_layout == "NHWC") {
    return depthwise ? ops::depthwise_conv2d_nhwc(in[0], in[1], c) : ops::conv2d_nhwc(in[0], in[1], c);
  }
  if (depthwise) return ops::depthwise_conv2d_nchwc(in[0], in[1], c);
  // The weight comes transformed (kernel_constant).
  if (a.winograd_tile > 0) return ops::conv2d_winograd_nchwc(in[0], in[1], c, a.winograd_tile);
  return ops::conv2d_nchwc(in[0], in[1], c);
}

// A Winograd convolution's weight: OIHW<i>i<o>o in the graph, transformed in
// the kernel.
bool winograd_weight(const Node& n, size_t index) {
  return n.op == Op::kConv2d && index == 1 && n.attrs_as<graph::Conv2dAttrs>().winograd_tile > 0;
}

ir::Tensor pool(const Node& n, const std::vector<ir::Tensor>& in) {
  const auto& a = n.attrs_as<graph::PoolAttrs>();
  if (a.layout != "NCHW" && a.layout != "NHWC" && !graph::is_channel_blocked(a.layout))
    unsupported(n, "pooling in " + a.layout);
  ops::Pool2dAttrs p;
  p.kernel_h = a.kernel_h, p.kernel_w = a.kernel_w, p.stride_h = a.stride_h, p.stride_w = a.stride_w;
  p.pad_top = a.pad_top, p.pad_left = a.pad_left, p.pad_bottom = a.pad_bottom, p.pad_right = a.pad_right;
  p.count_include_pad = a.count_include_pad;
  p.nhwc = a.layout == "NHWC";
  if (a.ceil_mode) {
    // Ceil mode as extra trailing padding: the output extents are the node's.
    const auto& s = in[0]->shape;
    const size_t h = p.h_axis(), w = p.w_axis();
    p.pad_bottom += std::max<int64_t>(0, (n.type.shape[h] - 1) * a.stride_h + a.kernel_h - (s[h] + a.pad_top + a.pad_bottom));
    p.pad_right += std::max<int64_t>(0, (n.type.shape[w] - 1) * a.stride_w + a.kernel_w - (s[w] + a.pad_left + a.pad_right));
    if (a.count_include_pad && (p.pad_bottom != a.pad_bottom || p.pad_right != a.pad_right))
      unsupported(n, "ceil_mode with count_include_pad");
  }
  return n.op == Op::kMaxPool2d ? ops::max_pool2d(in[0], p) : ops::avg_pool2d(in[0], p);
}

}  // namespace

ir::Tensor node_expression(const graph::Graph& g, const Node& n, const std::vector<ir::Tensor>& in) {
  switch (n.op) {
    case Op::kConv2d: return conv2d(g, n, in);
    case Op::kDense: return ops::dense_pack(in[0], in[1]);
    case Op::kBatchMatmul: return ops::batch_matmul(in[0], in[1]);
    case Op::kAdd: return ops::add(in[0], in[1]);
    case Op::kMultiply: return ops::multiply(in[0], in[1]);
    case Op::kRelu: return ops::relu(in[0]);
    case Op::kClip: {
      const auto& a = n.attrs_as<graph::ClipAttrs>();
      return ops::clip(in[0], a.min, a.max);
    }
    case Op::kSigmoid: return ops::sigmoid(in[0]);
    case Op::kBiasAdd: {
      const auto& a = n.attrs_as<graph::BiasAddAttrs>();
      const int64_t rank = static_cast<int64_t>(n.type.shape.size());
      return ops::bias_add(in[0], in[1], static_cast<size_t>(a.axis < 0 ? a.axis + rank : a.axis));
    }
    case Op::kMaxPool2d:
    case Op::kAvgPool2d: return pool(n, in);
    case Op::kGlobalAvgPool2d: {
      const std::string& layout = n.attrs_as<graph::GlobalPoolAttrs>().layout;
      if (layout != "NCHW" && layout != "NHWC" && !graph::is_channel_blocked(layout))
        unsupported(n, "global pooling in " + layout);
      return ops::global_avg_pool2d(in[0], layout == "NHWC");
    }
    case Op::kSoftmax: {
      const int64_t axis = n.attrs_as<graph::SoftmaxAttrs>().axis;
      if (axis != -1 && axis != static_cast<int64_t>(n.type.shape.size()) - 1) unsupported(n, "softmax over a non-last axis");
      return ops::softmax(in[0]);
    }
    case Op::kConcat: return ops::concat(in, n.attrs_as<graph::ConcatAttrs>().axis);
    case Op::kReshape:
    case Op::kFlatten:
    case Op::kDropout: return ops::reshape(in[0], n.type.shape);
    case Op::kTranspose: return ops::transpose(in[0], n.attrs_as<graph::TransposeAttrs>().perm);
    case Op::kPad: {
      const auto& a = n.attrs_as<graph::PadAttrs>();
      return ops::pad(in[0], a.before, a.after, a.value, "T_pad");
    }
    case Op::kLayoutTransform: {
      const auto& a = n.attrs_as<graph::LayoutTransformAttrs>();
      return ops::layout_transform(in[0], a.src, a.dst);
    }
    default: unsupported(n, "this operator");
  }
}

runtime::NDArray kernel_constant(const Node& n, size_t index, const runtime::NDArray& value) {
  if (winograd_weight(n, index)) {
    const std::vector<float> u =
        ops::winograd_transform_weight(value.data(), value.shape(), n.attrs_as<graph::Conv2dAttrs>().winograd_tile);
    runtime::NDArray out(kernel_constant_shape(n, index, value.shape()));
    std::memcpy(out.data(), u.data(), u.size() * sizeof(float));
    return out;
  }
  if (n.op != Op::kDense || index != 1) {
    runtime::NDArray copy(value.shape());
    std::memcpy(copy.data(), value.data(), value.size() * sizeof(float));
    return copy;
  }
  const graph::Shape shape = kernel_constant_shape(n, index, value.shape());
  const std::vector<float> packed = ops::pack_dense_weight(value.data(), value.shape()[0], value.shape()[1], shape[2]);
  runtime::NDArray out(shape);
  std::memcpy(out.data(), packed.data(), packed.size() * sizeof(float));
  return out;
}

graph::Shape kernel_constant_shape(const Node& n, size_t index, const graph::Shape& shape) {
  if (winograd_weight(n, index)) {
    const int64_t ib = shape.at(4), ob = shape.at(5);  // (O/ob, I/ib, 3, 3, ib, ob)
    return ops::winograd_weight_shape({shape[0] * ob, shape[1] * ib, shape[2], shape[3]}, ib, ob,
                                      n.attrs_as<graph::Conv2dAttrs>().winograd_tile);
  }
  if (n.op != Op::kDense || index != 1) return shape;
  const int64_t bn = ops::dense_pack_block(shape[0]);  // (N, K) as (N/bn, K, bn)
  return {shape[0] / bn, shape[1], bn};
}

}  // namespace tessera::build
