#include "graph/shape_inference.h"

#include "graph/blocked_conv.h"
#include "graph/layout.h"

#include <algorithm>
#include <numeric>

#include "graph/layout.h"
#include "ops/elementwise.h"
#include "support/checked_math.h"
#include "tessera/error.h"

namespace tessera::graph {
namespace {

using ops::shape_to_string;

[[noreturn]] void fail(const std::string& message) { throw Error(message); }

std::string str(int64_t v) { return std::to_string(v); }

// An axis in [-rank, rank) as a position in [0, rank).
int64_t normalize_axis(int64_t axis, size_t rank, const std::string& what) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) fail(what + " " + str(axis) + " is out of range for rank " + str(r));
  return axis < 0 ? axis + r : axis;
}

void check_rank(const std::string& arg, const Shape& shape, size_t rank) {
  if (shape.size() != rank)
    fail(arg + " must have rank " + str(static_cast<int64_t>(rank)) + ", got " + shape_to_string(shape));
}

void check_positive(const std::string& what, int64_t v) {
  if (v <= 0) fail(what + " must be positive, got " + str(v));
}

void check_non_negative(const std::string& what, int64_t v) {
  if (v < 0) fail(what + " must be non-negative, got " + str(v));
}

// Expected number of inputs per operator; -1 for "one or more".
int arity(Op op) {
  switch (op) {
    case Op::kInput:
    case Op::kConstant: return 0;
    case Op::kConv2d:
    case Op::kDense:
    case Op::kMatmul:
    case Op::kBatchMatmul:
    case Op::kBiasAdd:
    case Op::kAdd:
    case Op::kMultiply: return 2;
    case Op::kBatchNorm: return 5;
    case Op::kConcat: return -1;
    default: return 1;
  }
}

// Position of the channel, height and width axes in a 4-D activation layout.
struct SpatialAxes {
  size_t c, h, w;
};

SpatialAxes spatial_axes(const std::string& layout) {
  if (layout == "NCHW") return {1, 2, 3};
  if (layout == "NHWC") return {3, 1, 2};
  fail("layout " + layout + " is not supported (NCHW or NHWC)");
}

Shape conv2d_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& a) {
  if (is_blocked_conv(a)) {  // the same convolution in NCHW / OIHW, its output blocked
    const Shape out = conv2d_shape(
        layout_transform_shape(data, Layout::parse(a.data_layout), Layout::parse("NCHW")),
        layout_transform_shape(weight, Layout::parse(a.kernel_layout), Layout::parse("OIHW")), unblocked_attrs(a));
    return layout_transform_shape(out, Layout::parse("NCHW"), Layout::parse(blocked_output_layout(a)));
  }
  const bool nchw = a.data_layout == "NCHW" && a.kernel_layout == "OIHW";
  const bool nhwc = a.data_layout == "NHWC" && a.kernel_layout == "HWIO";
  if (!nchw && !nhwc)
    fail("data_layout " + a.data_layout + " with kernel_layout " + a.kernel_layout +
         " is not supported (NCHW with OIHW, or NHWC with HWIO)");
  check_rank("data (" + a.data_layout + ")", data, 4);
  check_rank("weight (" + a.kernel_layout + ")", weight, 4);
  for (int64_t d : data)
    if (d <= 0) fail("data " + shape_to_string(data) + " has a non-positive dimension");
  for (int64_t d : weight)
    if (d <= 0) fail("weight " + shape_to_string(weight) + " has a non-positive dimension");
  check_positive("groups", a.groups);
  check_positive("stride_h", a.stride_h);
  check_positive("stride_w", a.stride_w);
  check_positive("dilation_h", a.dilation_h);
  check_positive("dilation_w", a.dilation_w);
  check_non_negative("pad_top", a.pad_top);
  check_non_negative("pad_left", a.pad_left);
  check_non_negative("pad_bottom", a.pad_bottom);
  check_non_negative("pad_right", a.pad_right);
  const SpatialAxes ax = spatial_axes(a.data_layout);
  const int64_t n = data[0], c = data[ax.c], h = data[ax.h], w = data[ax.w];
  const int64_t o = nchw ? weight[0] : weight[3], i = nchw ? weight[1] : weight[2];
  const int64_t kh = nchw ? weight[2] : weight[0], kw = nchw ? weight[3] : weight[1];
  if (c % a.groups != 0)
    fail("data " + shape_to_string(data) + " has " + str(c) + " channels, not a multiple of groups=" + str(a.groups));
  if (o % a.groups != 0)
    fail("weight " + shape_to_string(weight) + " has " + str(o) +
         " output channels, not a multiple of groups=" + str(a.groups));
  if (i * a.groups != c) {
    const std::string per_group = a.groups == 1 ? "" : " (" + str(i) + " per group, groups=" + str(a.groups) + ")";
    fail("weight " + shape_to_string(weight) + " expects " + str(i * a.groups) + " input channels" + per_group +
         ", data " + shape_to_string(data) + " has " + str(c));
  }
  const int64_t oh =
      ops::window_output_extent("conv2d", "height", h, a.pad_top, a.pad_bottom, kh, a.stride_h, a.dilation_h);
  const int64_t ow =
      ops::window_output_extent("conv2d", "width", w, a.pad_left, a.pad_right, kw, a.stride_w, a.dilation_w);
  return nchw ? Shape{n, o, oh, ow} : Shape{n, oh, ow, o};
}

Shape pool_shape(const Shape& data, const PoolAttrs& a) {
  const bool blocked = is_channel_blocked(a.layout);
  const SpatialAxes ax = blocked ? SpatialAxes{1, 2, 3} : spatial_axes(a.layout);
  check_rank("data (" + a.layout + ")", data, blocked ? 5 : 4);
  if (blocked && data[4] != Layout::parse(a.layout).block_of('C'))
    fail("data " + shape_to_string(data) + " is not in layout " + a.layout);
  check_positive("kernel_h", a.kernel_h);
  check_positive("kernel_w", a.kernel_w);
  check_positive("stride_h", a.stride_h);
  check_positive("stride_w", a.stride_w);
  // A padding as wide as the kernel would make windows of padding alone.
  const std::pair<const char*, int64_t> pads[] = {
      {"pad_top", a.pad_top}, {"pad_bottom", a.pad_bottom}, {"pad_left", a.pad_left}, {"pad_right", a.pad_right}};
  for (auto [name, value] : pads) {
    check_non_negative(name, value);
    const int64_t kernel = name[4] == 't' || name[4] == 'b' ? a.kernel_h : a.kernel_w;
    if (value >= kernel) fail(std::string(name) + "=" + str(value) + " must be smaller than the kernel " + str(kernel));
  }
  if (a.ceil_mode && a.count_include_pad) fail("ceil_mode with count_include_pad is not supported");
  const int64_t h = data[ax.h], w = data[ax.w];
  if (h + a.pad_top + a.pad_bottom < a.kernel_h || w + a.pad_left + a.pad_right < a.kernel_w)
    fail("pool window " + shape_to_string({a.kernel_h, a.kernel_w}) + " is larger than the padded input " +
         shape_to_string(data));
  const int64_t oh = pool_output_extent(h, a.pad_top, a.pad_bottom, a.kernel_h, a.stride_h, a.ceil_mode);
  const int64_t ow = pool_output_extent(w, a.pad_left, a.pad_right, a.kernel_w, a.stride_w, a.ceil_mode);
  Shape out = data;
  out[ax.h] = oh;
  out[ax.w] = ow;
  return out;
}

Shape concat_shape(const std::vector<Shape>& inputs, const ConcatAttrs& a) {
  const Shape& first = inputs[0];
  const int64_t axis = normalize_axis(a.axis, first.size(), "axis");
  Shape out = first;
  for (size_t i = 1; i < inputs.size(); ++i) {
    const Shape& s = inputs[i];
    bool fits = s.size() == first.size();
    for (size_t d = 0; fits && d < s.size(); ++d) fits = static_cast<int64_t>(d) == axis || s[d] == first[d];
    if (!fits)
      fail("input " + str(static_cast<int64_t>(i)) + " " + shape_to_string(s) + " does not match input 0 " +
           shape_to_string(first) + " outside axis " + str(axis));
    out[axis] = support::checked_add(out[axis], s[axis], "concat");
  }
  return out;
}

Shape reshape_shape(const Shape& data, const ReshapeAttrs& a) {
  const int64_t total = ops::num_elements(data);
  Shape out = a.newshape;
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0) {
      if (i >= data.size())
        fail("newshape " + shape_to_string(a.newshape) + " copies axis " + str(static_cast<int64_t>(i)) +
             " (0) that data " + shape_to_string(data) + " does not have");
      out[i] = data[i];
    }
    if (out[i] == -1) {
      if (inferred >= 0) fail("newshape " + shape_to_string(a.newshape) + " has more than one -1");
      inferred = static_cast<int64_t>(i);
      continue;
    }
    if (out[i] < 0) fail("newshape " + shape_to_string(a.newshape) + " has a negative extent");
    known = support::checked_mul(known, out[i], "reshape");
  }
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      fail("cannot reshape data " + shape_to_string(data) + " to " + shape_to_string(a.newshape));
    out[inferred] = total / known;
  } else if (known != total) {
    fail("cannot reshape data " + shape_to_string(data) + " (" + str(total) + " elements) to " +
         shape_to_string(a.newshape) + " (" + str(known) + ")");
  }
  return out;
}

Shape infer_shape(const Graph& graph, const Node& node) {
  const int expected = arity(node.op);
  const auto count = static_cast<int>(node.inputs.size());
  if ((expected >= 0 && count != expected) || (expected < 0 && count < 1))
    fail("expects " + (expected < 0 ? std::string("at least one input") : str(expected) + " inputs") + ", got " +
         str(count));
  std::vector<Shape> in;
  for (NodeId id : node.inputs) in.push_back(graph.node(id).type.shape);

  switch (node.op) {
    case Op::kInput: {
      for (int64_t d : node.type.shape)
        if (d <= 0) fail("shape " + shape_to_string(node.type.shape) + " has a non-positive dimension");
      return node.type.shape;
    }
    case Op::kConstant: return node.value->shape();
    case Op::kConv2d: return conv2d_shape(in[0], in[1], node.attrs_as<Conv2dAttrs>());
    case Op::kDense: {
      check_rank("data", in[0], 2);
      check_rank("weight", in[1], 2);
      if (in[0][1] != in[1][1])
        fail("weight " + shape_to_string(in[1]) + " expects " + str(in[1][1]) + " input features, data " +
             shape_to_string(in[0]) + " has " + str(in[0][1]));
      return {in[0][0], in[1][0]};
    }
    case Op::kMatmul: {
      if (in[0].empty()) fail("a must have rank >= 1, got []");
      check_rank("b", in[1], 2);
      if (in[0].back() != in[1][0])
        fail("a " + shape_to_string(in[0]) + " has " + str(in[0].back()) + " columns, b " + shape_to_string(in[1]) +
             " has " + str(in[1][0]) + " rows");
      Shape out = in[0];
      out.back() = in[1][1];
      return out;
    }
    case Op::kBatchMatmul: {
      check_rank("a", in[0], 3);
      check_rank("b", in[1], 3);
      if (in[0][0] != in[1][0] || in[0][2] != in[1][2])
        fail("a " + shape_to_string(in[0]) + " (B, M, K) and b " + shape_to_string(in[1]) +
             " (B, N, K) differ in B or K");
      return {in[0][0], in[0][1], in[1][1]};
    }
    case Op::kBatchNorm: {
      const auto& a = node.attrs_as<BatchNormAttrs>();
      const int64_t axis = normalize_axis(a.axis, in[0].size(), "axis");
      if (!(a.epsilon >= 0)) fail("epsilon must be non-negative");
      const char* names[] = {"gamma", "beta", "mean", "var"};
      for (int i = 0; i < 4; ++i)
        if (in[i + 1] != Shape{in[0][axis]})
          fail(std::string(names[i]) + " " + shape_to_string(in[i + 1]) + " does not match the " + str(in[0][axis]) +
               " channels (axis " + str(axis) + ") of data " + shape_to_string(in[0]));
      return in[0];
    }
    case Op::kBiasAdd: {
      const int64_t axis = normalize_axis(node.attrs_as<BiasAddAttrs>().axis, in[0].size(), "axis");
      if (in[1] != Shape{in[0][axis]})
        fail("bias " + shape_to_string(in[1]) + " does not match axis " + str(axis) + " of data " +
             shape_to_string(in[0]));
      return in[0];
    }
    case Op::kAdd:
    case Op::kMultiply: return ops::broadcast_shape(op_name(node.op), in[0], in[1]);
    case Op::kRelu:
    case Op::kSigmoid:
    case Op::kDropout: return in[0];
    case Op::kClip: {
      const auto& a = node.attrs_as<ClipAttrs>();
      if (!(a.min <= a.max)) fail("min " + std::to_string(a.min) + " is above max " + std::to_string(a.max));
      return in[0];
    }
    case Op::kMaxPool2d:
    case Op::kAvgPool2d: return pool_shape(in[0], node.attrs_as<PoolAttrs>());
    case Op::kGlobalAvgPool2d: {
      const auto& a = node.attrs_as<GlobalPoolAttrs>();
      if (is_channel_blocked(a.layout)) {  // (N, C/b, H, W, b)
        check_rank("data (" + a.layout + ")", in[0], 5);
        return {in[0][0], in[0][1], 1, 1, in[0][4]};
      }
      const SpatialAxes ax = spatial_axes(a.layout);
      check_rank("data (" + a.layout + ")", in[0], 4);
      Shape out = in[0];
      out[ax.h] = out[ax.w] = 1;
      return out;
    }
    case Op::kConcat: return concat_shape(in, node.attrs_as<ConcatAttrs>());
    case Op::kReshape: return reshape_shape(in[0], node.attrs_as<ReshapeAttrs>());
    case Op::kFlatten: {
      const int64_t axis = node.attrs_as<FlattenAttrs>().axis, rank = static_cast<int64_t>(in[0].size());
      if (axis < 0 || axis > rank) fail("axis " + str(axis) + " is out of range for data " + shape_to_string(in[0]));
      const Shape outer(in[0].begin(), in[0].begin() + axis), inner(in[0].begin() + axis, in[0].end());
      return {ops::num_elements(outer), ops::num_elements(inner)};
    }
    case Op::kTranspose: {
      std::vector<int64_t> perm = node.attrs_as<TransposeAttrs>().perm;
      if (perm.empty())  // ONNX: reverse the axes
        for (size_t d = in[0].size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int64_t> identity(in[0].size());
      std::iota(identity.begin(), identity.end(), 0);
      if (sorted != identity)
        fail("perm " + shape_to_string(perm) + " is not a permutation of the axes of data " + shape_to_string(in[0]));
      Shape out;
      for (int64_t p : perm) out.push_back(in[0][p]);
      return out;
    }
    case Op::kPad: {
      const auto& a = node.attrs_as<PadAttrs>();
      if (a.before.size() != in[0].size() || a.after.size() != in[0].size())
        fail("before " + shape_to_string(a.before) + " and after " + shape_to_string(a.after) +
             " must have one entry per axis of data " + shape_to_string(in[0]));
      Shape out = in[0];
      for (size_t d = 0; d < out.size(); ++d) {
        check_non_negative("before[" + str(static_cast<int64_t>(d)) + "]", a.before[d]);
        check_non_negative("after[" + str(static_cast<int64_t>(d)) + "]", a.after[d]);
        out[d] = support::checked_add(support::checked_add(out[d], a.before[d], "pad"), a.after[d], "pad");
      }
      return out;
    }
    case Op::kSoftmax: normalize_axis(node.attrs_as<SoftmaxAttrs>().axis, in[0].size(), "axis"); return in[0];
    case Op::kLayoutTransform: {
      const auto& a = node.attrs_as<LayoutTransformAttrs>();
      return layout_transform_shape(in[0], Layout::parse(a.src), Layout::parse(a.dst));
    }
  }
  fail("unknown operator kind");
}

}  // namespace

int64_t pool_output_extent(int64_t in, int64_t pad_before, int64_t pad_after, int64_t kernel, int64_t stride,
                           bool ceil_mode) {
  const int64_t span = in + pad_before + pad_after - kernel;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_before) --out;
  return out;
}

TensorType infer_type(const Graph& graph, const Node& node) {
  try {
    TensorType type{infer_shape(graph, node), DataType::kFloat32};
    ops::num_elements(type.shape);  // throws past 2^40 elements
    return type;
  } catch (const Error& e) {
    // Helpers from ops:: start their messages with the operator's name, and
    // Node::attrs_as with the node's description: both are said once.
    std::string message = e.what();
    for (const std::string& prefix : {node.describe() + ": ", op_name(node.op) + ": "})
      if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
    throw Error(node.describe() + ": " + message);
  }
}

void infer_shapes(Graph& graph) {
  for (NodeId id = 0; id < static_cast<NodeId>(graph.size()); ++id)
    graph.mutable_node(id).type = infer_type(graph, graph.node(id));
  if (graph.outputs().empty()) throw Error("graph: no outputs");
}

}  // namespace tessera::graph
