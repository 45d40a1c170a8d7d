// recognize_layer_norm (passes.h): a layer norm as exporters wrote it before
// ONNX's LayerNormalization (opset 17), and as many still do:
//   m = ReduceMean(x, trailing axes); d = x - m
//   y = d / Sqrt(ReduceMean(d ^ 2, same axes) + eps) [* scale] [+ bias]
// (the importer makes Pow(d, 2) a multiply d * d). Operators that read each
// row three times in six kernels become one layer_norm.
#include <algorithm>
#include <map>
#include <optional>

#include "graph/passes.h"
#include "graph/pattern.h"
#include "graph/rewriter.h"
#include "ops/layer_norm.h"
#include "ops/reduce.h"

namespace tessera::graph {
namespace {

struct LayerNormMatch {
  NodeId x = -1, end = -1;  // the input; the last node of the pattern, which layer_norm replaces
  int64_t axis = 0;
  float epsilon = 0;
  std::optional<runtime::NDArray> scale, bias;  // shaped like the normalised axes
};

// The shape without its leading 1s: a constant broadcast over rows.
Shape without_leading_ones(const Shape& s) {
  size_t i = 0;
  while (i < s.size() && s[i] == 1) ++i;
  return Shape(s.begin() + static_cast<std::ptrdiff_t>(i), s.end());
}

class LayerNormMatcher {
 public:
  explicit LayerNormMatcher(const Graph& g) : g_(g), readers_(g.size()) {
    for (const Node& n : g.nodes())
      for (NodeId in : n.inputs) readers_[static_cast<size_t>(in)].push_back(n.id);
    for (NodeId out : g.outputs()) readers_[static_cast<size_t>(out)].push_back(-1);  // read by the caller
  }

  std::optional<LayerNormMatch> match(const Node& div) const {
    if (div.op != Op::named("divide")) return std::nullopt;
    const Node& d = g_.node(div.inputs[0]);
    if (d.op != Op::named("subtract")) return std::nullopt;
    LayerNormMatch m;
    m.x = d.inputs[0];
    const std::optional<int64_t> axis = trailing_mean_axis(d.inputs[1], m.x);
    if (!axis) return std::nullopt;
    m.axis = *axis;
    // The denominator: sqrt(mean(d * d) + eps), the sum in either order.
    const Node& root = g_.node(div.inputs[1]);
    if (root.op != Op::named("sqrt") || g_.node(root.inputs[0]).op != Op::kAdd) return std::nullopt;
    const Node& sum = g_.node(root.inputs[0]);
    bool found = false;
    for (int i = 0; i < 2 && !found; ++i) {
      const std::optional<float> eps = pattern::scalar(g_, sum.inputs[1 - i]);
      const Node& var = g_.node(sum.inputs[i]);
      if (!eps || !(*eps >= 0) || var.op != Op::named("reduce_mean")) continue;
      const Node& squares = g_.node(var.inputs[0]);
      if (squares.op != Op::kMultiply || squares.inputs[0] != d.id || squares.inputs[1] != d.id) continue;
      if (trailing_mean_axis(var.id, squares.id) != axis) continue;
      m.epsilon = *eps;
      found = true;
    }
    if (!found || g_.node(m.x).type.shape != div.type.shape) return std::nullopt;
    // The scale and the bias after it, when constants shaped like a row.
    const Shape& x = div.type.shape;
    const Shape row(x.begin() + m.axis, x.end());
    m.end = div.id;
    if (auto scale = row_constant_after(m.end, Op::kMultiply, row)) m.scale = std::move(scale->first), m.end = scale->second;
    if (auto bias = row_constant_after(m.end, Op::kAdd, row)) m.bias = std::move(bias->first), m.end = bias->second;
    return m;
  }

 private:
  // The first reduced axis when `mean` is reduce_mean(of) over trailing axes
  // with keepdims.
  std::optional<int64_t> trailing_mean_axis(NodeId mean, NodeId of) const {
    const Node& n = g_.node(mean);
    if (n.op != Op::named("reduce_mean") || n.inputs[0] != of) return std::nullopt;
    const auto& a = n.attrs_as<ops::ReduceAttrs>();
    const auto rank = static_cast<int64_t>(g_.node(of).type.shape.size());
    if (!a.keepdims || a.axes.empty()) return std::nullopt;
    std::vector<bool> reduced(static_cast<size_t>(rank), false);
    for (int64_t axis : a.axes) reduced[static_cast<size_t>(axis < 0 ? axis + rank : axis)] = true;
    int64_t first = rank;
    while (first > 0 && reduced[static_cast<size_t>(first - 1)]) --first;
    for (int64_t d = 0; d < first; ++d)
      if (reduced[static_cast<size_t>(d)]) return std::nullopt;  // not trailing
    return first;
  }

  // (values shaped `row`, the node) when the only reader of `id` is
  // `op`(id, c) or `op`(c, id) with c a constant that broadcasts as one row.
  std::optional<std::pair<runtime::NDArray, NodeId>> row_constant_after(NodeId id, Op op, const Shape& row) const {
    const std::vector<NodeId>& readers = readers_[static_cast<size_t>(id)];
    if (readers.size() != 1 || readers[0] < 0) return std::nullopt;
    const Node& n = g_.node(readers[0]);
    if (n.op != op || n.type.shape != g_.node(id).type.shape) return std::nullopt;
    for (int i = 0; i < 2; ++i) {
      const Node& c = g_.node(n.inputs[1 - i]);
      if (n.inputs[i] != id || c.op != Op::kConstant || !c.value) continue;
      if (without_leading_ones(c.type.shape) != without_leading_ones(row) || c.type.shape.size() > n.type.shape.size())
        continue;
      runtime::NDArray values(row);
      std::copy(c.value->data(), c.value->data() + c.value->size(), values.data());
      return std::make_pair(std::move(values), n.id);
    }
    return std::nullopt;
  }

  const Graph& g_;
  std::vector<std::vector<NodeId>> readers_;
};

}  // namespace

Graph recognize_layer_norm(const Graph& g) {
  const LayerNormMatcher matcher(g);
  std::map<NodeId, LayerNormMatch> ending_at;
  for (const Node& n : g.nodes())
    if (auto m = matcher.match(n)) ending_at.emplace(m->end, std::move(*m));
  Rewriter r(g);
  for (const Node& n : g.nodes()) {
    auto it = ending_at.find(n.id);
    if (it == ending_at.end()) {
      r.copy(n);  // the pattern's inner nodes: dead once nothing else reads them
      continue;
    }
    LayerNormMatch& m = it->second;
    const Shape& x = n.type.shape;
    const Shape row(x.begin() + m.axis, x.end());
    if (!m.scale) {
      m.scale = runtime::NDArray(row);
      std::fill(m.scale->data(), m.scale->data() + m.scale->size(), 1.0f);
    }
    if (!m.bias) m.bias = runtime::NDArray(row);  // zeros
    ops::LayerNormAttrs a;
    a.axis = m.axis;
    a.epsilon = m.epsilon;
    const NodeId scale = r.add_constant(n.name + ".scale", std::move(*m.scale));
    const NodeId bias = r.add_constant(n.name + ".bias", std::move(*m.bias));
    r.replace(n.id, r.add(Op::named("layer_norm"), n.name, {r.mapped(m.x), scale, bias}, a));
  }
  return r.finish();
}

}  // namespace tessera::graph
