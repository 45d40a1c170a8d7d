#include "graph/interpreter.h"

#include "graph/blocked_conv.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "graph/layout.h"
#include "ops/reference.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::graph {
namespace {

namespace ref = ops::reference;

ops::Conv2dAttrs to_ops(const Conv2dAttrs& a) {
  ops::Conv2dAttrs o;
  o.stride_h = a.stride_h, o.stride_w = a.stride_w;
  o.pad_top = a.pad_top, o.pad_left = a.pad_left, o.pad_bottom = a.pad_bottom, o.pad_right = a.pad_right;
  o.dilation_h = a.dilation_h, o.dilation_w = a.dilation_w;
  return o;
}

// ceil_mode becomes extra bottom/right padding that completes the last window:
// exact for max pooling (padding never wins) and for averages that do not
// count padding (shape inference refuses ceil_mode with count_include_pad).
ops::Pool2dAttrs to_ops(const PoolAttrs& a, const Shape& data, const Shape& out) {
  const size_t h = a.layout == "NHWC" ? 1 : 2, w = h + 1;
  ops::Pool2dAttrs o;
  o.kernel_h = a.kernel_h, o.kernel_w = a.kernel_w;
  o.stride_h = a.stride_h, o.stride_w = a.stride_w;
  o.pad_top = a.pad_top, o.pad_left = a.pad_left, o.pad_bottom = a.pad_bottom, o.pad_right = a.pad_right;
  o.count_include_pad = a.count_include_pad;
  o.pad_bottom += std::max<int64_t>(0, (out[h] - 1) * a.stride_h + a.kernel_h - (data[h] + a.pad_top + a.pad_bottom));
  o.pad_right += std::max<int64_t>(0, (out[w] - 1) * a.stride_w + a.kernel_w - (data[w] + a.pad_left + a.pad_right));
  return o;
}

size_t axis_of(int64_t axis, size_t rank) { return static_cast<size_t>(axis < 0 ? axis + int64_t(rank) : axis); }

// A pooling of channel-blocked data (`layout`): unpacked to NCHW, pooled
// there by `pool_nchw(x, x_shape, out, out_shape)`, packed back into y.
template <class PoolNchw>
void pool_blocked(const std::string& layout, const float* data, const Shape& data_shape, const Shape& out_shape,
                  float* y, const PoolNchw& pool_nchw) {
  const Layout blocked = Layout::parse(layout), nchw = Layout::parse("NCHW");
  runtime::NDArray x(layout_transform_shape(data_shape, blocked, nchw));
  layout_transform(data, data_shape, blocked, nchw, x.data());
  runtime::NDArray pooled(layout_transform_shape(out_shape, blocked, nchw));
  pool_nchw(x.data(), x.shape(), pooled.data(), pooled.shape());
  layout_transform(pooled.data(), pooled.shape(), nchw, blocked, y);
}

void copy(const runtime::NDArray& from, runtime::NDArray& to) {
  std::memcpy(to.data(), from.data(), sizeof(float) * static_cast<size_t>(from.size()));
}

}  // namespace

namespace {

// The blocked conv unpacked to NCHW / OIHW, computed there, packed back.
void evaluate_blocked_conv(const Conv2dAttrs& a, const runtime::NDArray& data, const runtime::NDArray& weight,
                           const Shape& out_shape, float* y) {
  const Layout nchw = Layout::parse("NCHW"), oihw = Layout::parse("OIHW");
  const Layout data_layout = Layout::parse(a.data_layout), kernel_layout = Layout::parse(a.kernel_layout);
  const Layout out_layout = Layout::parse(blocked_output_layout(a));
  runtime::NDArray x(layout_transform_shape(data.shape(), data_layout, nchw));
  layout_transform(data.data(), data.shape(), data_layout, nchw, x.data());
  runtime::NDArray w(layout_transform_shape(weight.shape(), kernel_layout, oihw));
  layout_transform(weight.data(), weight.shape(), kernel_layout, oihw, w.data());
  runtime::NDArray out(layout_transform_shape(out_shape, out_layout, nchw));
  const Conv2dAttrs u = unblocked_attrs(a);
  ops::Conv2dAttrs c;
  c.stride_h = u.stride_h, c.stride_w = u.stride_w, c.dilation_h = u.dilation_h, c.dilation_w = u.dilation_w;
  c.pad_top = u.pad_top, c.pad_left = u.pad_left, c.pad_bottom = u.pad_bottom, c.pad_right = u.pad_right;
  ops::reference::conv2d_grouped_nchw(x.data(), x.shape(), w.data(), w.shape(), c, u.groups, out.data());
  layout_transform(out.data(), out.shape(), nchw, out_layout, y);
}

}  // namespace

runtime::NDArray evaluate(const Graph& graph, const Node& node, const std::vector<const runtime::NDArray*>& args) {
  if (args.size() != node.inputs.size())
    throw Error(node.describe() + ": evaluated with " + std::to_string(args.size()) + " arguments, expects " +
                std::to_string(node.inputs.size()));
  runtime::NDArray out(node.type.shape);
  auto arg = [&](size_t i) -> const float* { return args[i]->data(); };
  auto shape = [&](size_t i) -> const Shape& { return args[i]->shape(); };
  float* y = out.data();
  switch (node.op) {
    case Op::kInput:
    case Op::kConstant: throw Error(node.describe() + ": has no computation to evaluate");
    case Op::kConv2d: {
      const auto& a = node.attrs_as<Conv2dAttrs>();
      if (is_blocked_conv(a)) {
        evaluate_blocked_conv(a, *args[0], *args[1], node.type.shape, y);
        break;
      }
      if (a.data_layout == "NHWC")
        ref::conv2d_grouped_nhwc(arg(0), shape(0), arg(1), shape(1), to_ops(a), a.groups, y);
      else
        ref::conv2d_grouped_nchw(arg(0), shape(0), arg(1), shape(1), to_ops(a), a.groups, y);
      break;
    }
    case Op::kDense: ref::dense(arg(0), arg(1), shape(0)[0], shape(1)[0], shape(0)[1], y); break;
    case Op::kMatmul: {
      // a (..., K) . b (K, N) is dense against b transposed to (N, K).
      const int64_t k = shape(1)[0], n = shape(1)[1];
      runtime::NDArray bt({n, k});
      ref::transpose(arg(1), shape(1), {1, 0}, bt.data());
      ref::dense(arg(0), bt.data(), args[0]->size() / k, n, k, y);
      break;
    }
    case Op::kBatchMatmul:
      ref::batch_matmul(arg(0), arg(1), shape(0)[0], shape(0)[1], shape(1)[1], shape(0)[2], y);
      break;
    case Op::kBatchNorm: {
      const auto& a = node.attrs_as<BatchNormAttrs>();
      ref::batch_norm(arg(0), shape(0), axis_of(a.axis, shape(0).size()), arg(1), arg(2), arg(3), arg(4), a.epsilon, y);
      break;
    }
    case Op::kBiasAdd:
      ref::bias_add(arg(0), shape(0), arg(1), {axis_of(node.attrs_as<BiasAddAttrs>().axis, shape(0).size())}, y);
      break;
    case Op::kAdd: ref::add(arg(0), shape(0), arg(1), shape(1), y); break;
    case Op::kMultiply: ref::multiply(arg(0), shape(0), arg(1), shape(1), y); break;
    case Op::kRelu: ref::relu(arg(0), out.size(), y); break;
    case Op::kClip: {
      const auto& a = node.attrs_as<ClipAttrs>();
      ref::clip(arg(0), out.size(), a.min, a.max, y);
      break;
    }
    case Op::kSigmoid: ref::sigmoid(arg(0), out.size(), y); break;
    case Op::kMaxPool2d:
    case Op::kAvgPool2d: {
      const auto& a = node.attrs_as<PoolAttrs>();
      const bool is_max = node.op == Op::kMaxPool2d;
      if (is_channel_blocked(a.layout)) {
        pool_blocked(a.layout, arg(0), shape(0), node.type.shape, y,
                     [&](const float* x, const Shape& xs, float* out, const Shape& outs) {
                       (is_max ? ref::max_pool2d : ref::avg_pool2d)(x, xs, to_ops(a, xs, outs), out);
                     });
        break;
      }
      const ops::Pool2dAttrs p = to_ops(a, shape(0), node.type.shape);
      if (a.layout == "NHWC")
        (is_max ? ref::max_pool2d_nhwc : ref::avg_pool2d_nhwc)(arg(0), shape(0), p, y);
      else
        (is_max ? ref::max_pool2d : ref::avg_pool2d)(arg(0), shape(0), p, y);
      break;
    }
    case Op::kGlobalAvgPool2d: {
      const std::string& layout = node.attrs_as<GlobalPoolAttrs>().layout;
      if (is_channel_blocked(layout)) {
        pool_blocked(layout, arg(0), shape(0), node.type.shape, y,
                     [](const float* x, const Shape& xs, float* out, const Shape&) { ref::global_avg_pool2d(x, xs, out); });
      } else if (layout == "NHWC") {
        ref::global_avg_pool2d_nhwc(arg(0), shape(0), y);
      } else {
        ref::global_avg_pool2d(arg(0), shape(0), y);
      }
      break;
    }
    case Op::kConcat: {
      std::vector<const float*> data;
      std::vector<Shape> shapes;
      for (size_t i = 0; i < args.size(); ++i) data.push_back(arg(i)), shapes.push_back(shape(i));
      ref::concat(data, shapes, axis_of(node.attrs_as<ConcatAttrs>().axis, shape(0).size()), y);
      break;
    }
    case Op::kReshape:
    case Op::kFlatten:
    case Op::kDropout: copy(*args[0], out); break;  // same elements in the same order
    case Op::kTranspose: {
      std::vector<int64_t> perm = node.attrs_as<TransposeAttrs>().perm;
      if (perm.empty())
        for (size_t d = shape(0).size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
      ref::transpose(arg(0), shape(0), perm, y);
      break;
    }
    case Op::kPad: {
      const auto& a = node.attrs_as<PadAttrs>();
      ref::pad(arg(0), shape(0), a.before, a.after, a.value, y);
      break;
    }
    case Op::kSoftmax:
      ref::softmax(arg(0), shape(0), axis_of(node.attrs_as<SoftmaxAttrs>().axis, shape(0).size()), y);
      break;
    case Op::kLayoutTransform: {
      const auto& a = node.attrs_as<LayoutTransformAttrs>();
      layout_transform(arg(0), shape(0), Layout::parse(a.src), Layout::parse(a.dst), y);
      break;
    }
  }
  return out;
}

std::vector<runtime::NDArray> interpret(const Graph& graph, const std::vector<runtime::NDArray>& inputs) {
  const std::vector<NodeId> input_ids = graph.input_ids();
  if (inputs.size() != input_ids.size())
    throw Error("interpret: the graph has " + std::to_string(input_ids.size()) + " inputs, " +
                std::to_string(inputs.size()) + " given");
  // The last node reading each value: intermediates are freed after it, so a
  // deep network never holds all its activations at once.
  std::vector<NodeId> last_use(graph.size(), -1);
  for (const Node& n : graph.nodes())
    for (NodeId in : n.inputs) last_use[in] = n.id;
  for (NodeId out : graph.outputs()) last_use[out] = static_cast<NodeId>(graph.size());

  std::vector<std::shared_ptr<const runtime::NDArray>> values(graph.size());
  size_t next_input = 0;
  for (const Node& node : graph.nodes()) {
    if (node.op == Op::kInput) {
      const runtime::NDArray& given = inputs[next_input++];
      if (given.shape() != node.type.shape)
        throw Error("interpret: input " + support::quoted(node.name) + " expects shape " +
                    ops::shape_to_string(node.type.shape) + ", got " + ops::shape_to_string(given.shape()));
      auto value = std::make_shared<runtime::NDArray>(given.shape());
      copy(given, *value);
      values[node.id] = std::move(value);
    } else if (node.op == Op::kConstant) {
      values[node.id] = node.value;
    } else if (node.op == Op::kDropout) {
      values[node.id] = values[node.inputs[0]];  // identity: share the value
    } else {
      std::vector<const runtime::NDArray*> args;
      for (NodeId in : node.inputs) args.push_back(values[in].get());
      values[node.id] = std::make_shared<runtime::NDArray>(evaluate(graph, node, args));
    }
    for (NodeId in : node.inputs)
      if (last_use[in] == node.id) values[in].reset();
  }
  std::vector<runtime::NDArray> outputs;
  for (NodeId id : graph.outputs()) {
    runtime::NDArray out(values[id]->shape());
    copy(*values[id], out);
    outputs.push_back(std::move(out));
  }
  return outputs;
}

std::vector<runtime::NDArray> interpret(const Graph& graph, const std::map<std::string, runtime::NDArray>& inputs) {
  std::vector<runtime::NDArray> ordered;
  size_t used = 0;
  for (NodeId id : graph.input_ids()) {
    const std::string& name = graph.node(id).name;
    auto it = inputs.find(name);
    if (it == inputs.end()) throw Error("interpret: no value given for input " + support::quoted(name));
    runtime::NDArray copy_of(it->second.shape());
    copy(it->second, copy_of);
    ordered.push_back(std::move(copy_of));
    ++used;
  }
  if (used != inputs.size())
    for (const auto& [name, value] : inputs) {
      auto id = graph.find(name);
      if (!id || graph.node(*id).op != Op::kInput)
        throw Error("interpret: " + support::quoted(name) + " is not an input of the graph");
    }
  return interpret(graph, ordered);
}

}  // namespace tessera::graph
