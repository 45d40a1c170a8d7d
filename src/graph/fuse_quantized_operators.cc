// fuse_quantized_operators (passes.h): a quantized model's float operators
// between QuantizeLinear / DequantizeLinear pairs (onnxruntime's QDQ format)
// become the int8 kernels that compute them in integers.
//
// Each pattern ends at a quantize node, whose scale and zero point are the
// int8 kernel's output's, and starts at per-tensor dequantize nodes, whose
// inputs the kernel reads as stored:
//
//   quantize([relu|clip(0, M)]([bias_add](conv2d(dequantize(x), dequantize_per_channel(w)), b)))
//       -> qlinear_conv2d(x, w, w_scale, round(b / (x_scale * w_scale)))
//   quantize(moves([relu]([bias_add](dense(moves(dequantize(x)), dequantize_per_channel(w)), b))))
//       -> moves(qlinear_dense(moves(x), w, w_scale, the bias in units, x's zero point folded))
//   quantize([relu](add(dequantize(a), dequantize(b))))  -> qlinear_add(a, b)
//   quantize(moves([relu](batch_matmul(moves(dequantize(a)), moves(dequantize(b))))))
//       -> moves(qlinear_batch_matmul(moves(a), moves(b)))    (moves: reshapes, transposes)
//   quantize(max_pool2d | reshape | flatten(dequantize(x))), the same quantization
//       -> the operator on x
//   quantize(dequantize(q)), the same quantization            -> q
//
// Signed activations are read as unsigned first (activations_as_unsigned).
// A pattern whose parts the kernels do not take (a weight zero point, a
// grouped convolution, a value another node reads too) stays as it was: the
// float operators between the pairs, exactly as the model defines them.
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "graph/interpreter.h"
#include "graph/passes.h"
#include "graph/rewriter.h"
#include "ops/conv2d.h"
#include "ops/elementwise.h"
#include "ops/qlinear_add.h"
#include "ops/qlinear_batch_matmul.h"
#include "ops/qlinear_conv2d.h"
#include "ops/qlinear_dense.h"
#include "ops/quantize.h"
#include "ops/requantize.h"
#include "tessera/error.h"

namespace tessera::graph {
namespace {

bool is(const Node& n, const char* op) { return n.op == Op::named(op); }

// The per-tensor quantization a dequantize node reads its input with, when
// that input is stored in the type it names (a kernel can read it as is).
const ops::QuantizeAttrs* dequantized(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (!is(n, "dequantize")) return nullptr;
  const auto& a = n.attrs_as<ops::QuantizeAttrs>();
  const DataType stored = g.node(n.inputs[0]).type.dtype;
  return stored == (a.dtype == "int8" ? DataType::kInt8 : DataType::kUInt8) ? &a : nullptr;
}

// Max pooling and the reshapes: stored values moved without arithmetic.
bool moves_values(const Node& n) { return n.op == Op::kMaxPool2d || n.op == Op::kReshape || n.op == Op::kFlatten; }

// What carries each value to another place unchanged: between a dequantize
// and a product, the same moves of the stored bytes.
bool moves_each_value(const Node& n) {
  return (n.op == Op::kReshape || n.op == Op::kFlatten || n.op == Op::kTranspose) && n.inputs.size() == 1;
}

bool same(const ops::QuantizeAttrs& a, const ops::QuantizeAttrs& b) {
  return a.scale == b.scale && a.zero_point == b.zero_point && a.dtype == b.dtype;
}

// A node computed from constants alone, one level deep (a constant, or a
// dequantize_per_channel of constants): its values, else nullopt.
std::optional<runtime::NDArray> constant_value(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (n.op == Op::kConstant) return runtime::copy_of(*n.value);
  std::vector<const runtime::NDArray*> args;
  for (NodeId in : n.inputs) {
    if (g.node(in).op != Op::kConstant) return std::nullopt;
    args.push_back(g.node(in).value.get());
  }
  if (!is(n, "dequantize_per_channel")) return std::nullopt;
  return evaluate(g, n, args);
}

// An int8 weight quantized per output channel with zero points 0 (what
// qlinear_conv2d multiplies): its integers and scales.
struct Int8Weight {
  NodeId values = -1;
  const runtime::NDArray* scales = nullptr;
};

std::optional<Int8Weight> int8_weight(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (!is(n, "dequantize_per_channel") || n.attrs_as<ops::DequantizePerChannelAttrs>().axis != 0) return std::nullopt;
  const Node &q = g.node(n.inputs[0]), &scale = g.node(n.inputs[1]), &zero = g.node(n.inputs[2]);
  if (q.op != Op::kConstant || q.type.dtype != DataType::kInt8 || scale.op != Op::kConstant || zero.op != Op::kConstant)
    return std::nullopt;
  for (int64_t c = 0; c < zero.value->size(); ++c)
    if ((*zero.value)[c] != 0.0f) return std::nullopt;
  return Int8Weight{q.id, scale.value.get()};
}

// The node an int8 kernel replaces the quantize node `q` with, or -1.
class Fuser {
 public:
  Fuser(const Graph& g, Rewriter& r) : g_(g), r_(r), uses_(count_consumers(g)) {}

  NodeId fuse(const Node& q) {
    const auto& y = q.attrs_as<ops::QuantizeAttrs>();
    const NodeId x = q.inputs[0];
    if (const ops::QuantizeAttrs* a = dequantized(g_, x); a && same(*a, y)) return r_.mapped(g_.node(x).inputs[0]);
    if (NodeId id = same_values(x, y); id >= 0) return id;
    if (NodeId id = convolution(q.name, x, y); id >= 0) return id;
    if (NodeId id = dense(q.name, x, y); id >= 0) return id;
    if (NodeId id = batch_product(q.name, x, y); id >= 0) return id;
    return add(q.name, x, y);
  }

 private:
  // Whether `id` is read by one node only (and is no output): the fused
  // kernel can take its place.
  bool single(NodeId id) const { return uses_[id] == 1; }

  // Max pooling and the reshapes move stored values without arithmetic: in
  // one scale and zero point, they move the bytes.
  NodeId same_values(NodeId id, const ops::QuantizeAttrs& y) {
    const Node& n = g_.node(id);
    if (!moves_values(n) || !single(id) || n.inputs.size() != 1) return -1;
    const ops::QuantizeAttrs* x = dequantized(g_, n.inputs[0]);
    if (!x || !same(*x, y)) return -1;
    return r_.add(n.op, n.name + ".int8", {r_.mapped(g_.node(n.inputs[0]).inputs[0])}, n.attrs);
  }

  // What a quantize ends: [relu | clip(0, M)]([bias_add](anchor, bias)),
  // each read once.
  struct Epilogue {
    NodeId anchor = -1, bias = -1;
    bool relu = false;
    float clip_max = 0.0f;  // a ReLU6's M
  };
  Epilogue epilogue(NodeId id) const {
    Epilogue e;
    if (const Node& n = g_.node(id); single(id) && n.op == Op::kRelu) {
      e.relu = true, id = n.inputs[0];
    } else if (single(id) && n.op == Op::kClip && n.attrs_as<ops::ClipAttrs>().min == 0.0f &&
               n.attrs_as<ops::ClipAttrs>().max > 0.0f) {
      e.relu = true, e.clip_max = n.attrs_as<ops::ClipAttrs>().max, id = n.inputs[0];
    }
    if (const Node& n = g_.node(id); single(id) && n.op == Op::kBiasAdd && n.attrs_as<ops::BiasAddAttrs>().axis == 1)
      e.bias = n.inputs[1], id = n.inputs[0];
    if (single(id)) e.anchor = id;
    return e;
  }

  // An int8 kernel's operands: x as stored, the weight's integers and
  // scales, and the bias in units of x_scale * w_scale[f] less `share[f]`
  // (x's zero point's, where the kernel folds it), as int32.
  std::optional<std::vector<NodeId>> int8_operands(const Node& anchor, NodeId x_bytes, const Epilogue& e,
                                                   float x_scale, const std::vector<int64_t>& share,
                                                   const std::string& name) {
    const std::optional<Int8Weight> w = int8_weight(g_, anchor.inputs[1]);
    const int64_t outputs = anchor.type.shape[1];
    std::optional<runtime::NDArray> b;
    if (e.bias >= 0) b = constant_value(g_, e.bias);
    if (!w || (e.bias >= 0 && (!b || b->size() != outputs))) return std::nullopt;
    runtime::NDArray bias({outputs});
    for (int64_t f = 0; f < outputs; ++f)
      bias[f] = static_cast<float>(ops::bias_in_units(b ? (*b)[f] : 0.0f, x_scale, (*w->scales)[f]) -
                                   (share.empty() ? 0 : share[static_cast<size_t>(f)]));
    const Node& weight = g_.node(w->values);
    return std::vector<NodeId>{x_bytes,
                               r_.add_constant(weight.name, runtime::copy_of(*weight.value), DataType::kInt8),
                               r_.add_constant(name + ".weight_scale", runtime::copy_of(*w->scales)),
                               r_.add_constant(name + ".bias.int32", std::move(bias), DataType::kInt32)};
  }

  NodeId convolution(const std::string& name, NodeId id, const ops::QuantizeAttrs& y) {
    const Epilogue e = epilogue(id);
    if (e.anchor < 0 || g_.node(e.anchor).op != Op::kConv2d) return -1;
    const Node& conv = g_.node(e.anchor);
    ops::QLinearConv2dAttrs a;
    a.conv = conv.attrs_as<ops::Conv2dAttrs>();
    a.y_scale = y.scale, a.y_zero_point = y.zero_point, a.y_dtype = y.dtype;
    a.relu = e.relu, a.clip_max = e.clip_max;
    // Depthwise of multiplier 1: one weight channel per input channel.
    const bool depthwise = is_depthwise(g_, conv) && g_.node(conv.inputs[1]).type.shape[0] == a.conv.groups;
    if (a.conv.data_layout != "NCHW" || a.conv.kernel_layout != "OIHW" || (a.conv.groups != 1 && !depthwise)) return -1;
    const ops::QuantizeAttrs* x = dequantized(g_, conv.inputs[0]);
    if (!x) return -1;
    a.x_scale = x->scale, a.x_zero_point = x->zero_point, a.x_dtype = x->dtype;
    const auto operands = int8_operands(conv, r_.mapped(g_.node(conv.inputs[0]).inputs[0]), e, a.x_scale, {}, name);
    return operands ? r_.add(Op::named("qlinear_conv2d"), name + ".int8", *operands, a) : -1;
  }

  // A MatMul of 3-D activations by a weight imports as reshape(dense(reshape(x))):
  // the reshapes are moves of the bytes around the int8 kernel.
  NodeId dense(const std::string& name, NodeId id, const ops::QuantizeAttrs& y) {
    std::vector<NodeId> moves;  // outermost first
    while (single(id) && moves_each_value(g_.node(id))) {
      moves.push_back(id);
      id = g_.node(id).inputs[0];
    }
    const Epilogue e = epilogue(id);
    if (e.anchor < 0 || g_.node(e.anchor).op != Op::kDense || e.clip_max > 0) return -1;
    const Node& product = g_.node(e.anchor);
    const std::optional<Int8Weight> w = int8_weight(g_, product.inputs[1]);
    if (!w) return -1;
    const auto x = moved_bytes(product.inputs[0]);
    if (!x) return -1;
    ops::QLinearDenseAttrs a;
    a.x_dtype = x->second.dtype;
    a.output = {x->second.scale, y.scale, y.zero_point, y.dtype, e.relu, 0.0f};
    // qlinear_dense's bias has x's zero point's share folded in.
    const Node& weight = g_.node(w->values);
    const auto operands =
        int8_operands(product, x->first, e, x->second.scale,
                      ops::zero_point_share(weight.value->data(), weight.type.shape, x->second.zero_point), name);
    return operands ? moved_back(r_.add(Op::named("qlinear_dense"), name + ".int8", *operands, a), moves) : -1;
  }

  // `id` through `moves` (outermost first) as the graph moved what it replaces.
  NodeId moved_back(NodeId id, const std::vector<NodeId>& moves) {
    for (auto m = moves.rbegin(); m != moves.rend(); ++m)
      id = r_.add(g_.node(*m).op, g_.node(*m).name + ".int8", {id}, g_.node(*m).attrs);
    return id;
  }

  // A dequantized value through moves each read once (the importer's
  // reshapes and transposes around a MatMul's operands): the same moves of
  // its stored bytes, and its quantization.
  std::optional<std::pair<NodeId, ops::QuantizeAttrs>> moved_bytes(NodeId id) {
    const Node& n = g_.node(id);
    if (const ops::QuantizeAttrs* q = dequantized(g_, id)) return std::pair{r_.mapped(n.inputs[0]), *q};
    if (!single(id) || !moves_each_value(n)) return std::nullopt;
    const auto inner = moved_bytes(n.inputs[0]);
    if (!inner) return std::nullopt;
    return std::pair{r_.add(n.op, n.name + ".int8", {inner->first}, n.attrs), inner->second};
  }

  // A product of two dequantized activations, its result quantized after
  // moves and a relu (which commute: each value stays itself).
  NodeId batch_product(const std::string& name, NodeId id, const ops::QuantizeAttrs& y) {
    std::vector<NodeId> moves;  // outermost first
    bool relu = false;
    for (const Node* n = &g_.node(id); single(id) && (moves_each_value(*n) || n->op == Op::kRelu); n = &g_.node(id)) {
      if (n->op == Op::kRelu) relu = true;
      else moves.push_back(id);
      id = n->inputs[0];
    }
    const Node& product = g_.node(id);
    if (!single(id) || product.op != Op::kBatchMatmul) return -1;
    const auto a = moved_bytes(product.inputs[0]);
    const auto b = moved_bytes(product.inputs[1]);
    if (!a || !b) return -1;
    ops::QLinearBatchMatmulAttrs attrs;
    attrs.a = a->second, attrs.b = b->second;
    attrs.output = {attrs.a.scale, y.scale, y.zero_point, y.dtype, relu, 0.0f};
    return moved_back(r_.add(Op::named("qlinear_batch_matmul"), name + ".int8", {a->first, b->first}, attrs), moves);
  }

  NodeId add(const std::string& name, NodeId id, const ops::QuantizeAttrs& y) {
    ops::QLinearAddAttrs a;
    a.y = y;
    if (const Node& n = g_.node(id); single(id) && n.op == Op::kRelu) a.relu = true, id = n.inputs[0];
    const Node& sum = g_.node(id);
    if (sum.op != Op::kAdd || !single(id) || sum.inputs.size() != 2) return -1;
    const ops::QuantizeAttrs *lhs = dequantized(g_, sum.inputs[0]), *rhs = dequantized(g_, sum.inputs[1]);
    if (!lhs || !rhs || g_.node(sum.inputs[0]).type.shape != g_.node(sum.inputs[1]).type.shape) return -1;
    a.a = *lhs, a.b = *rhs;
    try {
      ops::add_multipliers(a);  // scale ratios the fixed-point sum cannot hold stay float
    } catch (const Error&) {
      return -1;
    }
    return r_.add(Op::named("qlinear_add"), name + ".int8",
                  {r_.mapped(g_.node(sum.inputs[0]).inputs[0]), r_.mapped(g_.node(sum.inputs[1]).inputs[0])}, a);
  }

  const Graph& g_;
  Rewriter& r_;
  std::vector<int> uses_;
};

// Signed activations (onnxruntime's default S8S8 QDQ) as unsigned bytes:
// q + 128 with zero point + 128 is the same real value, and saturating
// [-128, 127] is saturating [0, 255] shifted, so a quantize to int8 may
// store uint8 instead where every reader of its value reads it so: a
// dequantize, or what moves its values (a max pooling, whose padding is the
// type's minimum either way; a reshape) for such readers in turn. What the
// byte dot product multiplies (vpdpbusd takes unsigned bytes times signed
// ones). A value a graph output or another operator reads stays int8.
Graph activations_as_unsigned(const Graph& g) {
  std::vector<std::vector<NodeId>> readers(g.size());
  for (const Node& n : g.nodes())
    for (NodeId in : n.inputs) readers[in].push_back(n.id);
  std::vector<bool> output(g.size(), false);
  for (NodeId o : g.outputs()) output[o] = true;
  // Whether every reader of `id`'s value could read it as uint8, recursively.
  std::vector<int> readable(g.size(), -1);
  std::function<bool(NodeId)> only_shifting_readers = [&](NodeId id) -> bool {
    if (readable[id] >= 0) return readable[id] == 1;
    bool ok = !output[id];
    for (NodeId r : readers[id]) {
      const Node& n = g.node(r);
      const bool dequantizes = is(n, "dequantize") && n.attrs_as<ops::QuantizeAttrs>().dtype == "int8";
      ok = ok && (dequantizes || (moves_values(n) && only_shifting_readers(r)));
    }
    readable[id] = ok;
    return ok;
  };
  Rewriter r(g);
  std::vector<bool> shifted(g.size(), false);
  for (const Node& n : g.nodes()) {
    const bool signed_pair =
        (is(n, "quantize") || is(n, "dequantize")) && n.attrs_as<ops::QuantizeAttrs>().dtype == "int8";
    const bool relabel = signed_pair && (is(n, "quantize") ? only_shifting_readers(n.id) : shifted[n.inputs[0]]);
    if (!relabel) {
      shifted[n.id] = moves_values(n) && shifted[n.inputs[0]];
      r.copy(n);
      continue;
    }
    shifted[n.id] = is(n, "quantize");
    ops::QuantizeAttrs a = n.attrs_as<ops::QuantizeAttrs>();
    a.dtype = "uint8", a.zero_point += 128;
    r.replace(n.id, r.add(n.op, n.name, {r.mapped(n.inputs[0])}, a));
  }
  return r.finish();
}

}  // namespace

Graph fuse_quantized_operators(const Graph& model) {
  const Graph g = activations_as_unsigned(model);
  Rewriter r(g);
  Fuser fuser(g, r);
  for (const Node& n : g.nodes()) {
    const NodeId fused = is(n, "quantize") ? fuser.fuse(n) : -1;
    if (fused >= 0)
      r.replace(n.id, fused);
    else
      r.copy(n);
  }
  return eliminate_dead_nodes(r.finish());
}

}  // namespace tessera::graph
