// combine_qkv_projections (passes.h): the three dense layers that project one
// sequence into a self-attention's queries, keys and values become one
// dense layer of their weights stacked, whose (tokens, 3 x heads x D) output
// the attention reads as it is (ops/attention.h, packed). One product three
// times as wide fills a GPU that three narrow ones leave half idle (BERT-base
// at batch 1: three 128 x 768 x 768 products a layer), reads the tokens once,
// and is one launch instead of three. Scalars the export multiplies the
// queries or keys by (1 / sqrt(D), or its root on both) fold into their rows
// of the weight and bias.
#include <optional>

#include "graph/passes.h"
#include "graph/rewriter.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/transform.h"

namespace tessera::graph {
namespace {

// One projection: ((x times a constant weight (N, K)) [x s1] [+ a constant
// bias of N]) [x s2], scales s1 and s2 constant scalars (an export's
// 1 / sqrt(D), or its root, on the queries and keys): the weight scaled by
// s1 s2 and the bias by s2 are its dense layer and bias.
struct Projection {
  NodeId x = -1;  // the dense layer's input
  const Node* weight = nullptr;
  const Node* bias = nullptr;  // a constant of shape (N), or none
  float weight_scale = 1, bias_scale = 1;
};

bool float_constant(const Node& n) { return n.op == Op::kConstant && n.value && n.type.dtype == DataType::kFloat32; }

// The bias of `add` (an add, or a bias_add along the last axis, of a 2-D
// value and a constant of its columns), and the other operand; else nothing.
std::optional<std::pair<const Node*, NodeId>> bias_of(const Graph& g, const Node& add) {
  if (add.type.shape.size() != 2 || add.inputs.size() != 2) return std::nullopt;
  const Shape columns = {add.type.shape[1]};
  if (add.op == Op::kBiasAdd) {
    const int64_t axis = add.attrs_as<ops::BiasAddAttrs>().axis;
    const Node& b = g.node(add.inputs[1]);
    if ((axis != 1 && axis != -1) || !float_constant(b) || b.type.shape != columns) return std::nullopt;
    return std::make_pair(&b, add.inputs[0]);
  }
  if (add.op != Op::kAdd) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    const Node& b = g.node(add.inputs[i]);
    if (float_constant(b) && b.type.shape == columns) return std::make_pair(&b, add.inputs[1 - i]);
  }
  return std::nullopt;
}

// The scalar of `n`, a multiply by a constant of one element, and the other operand; else nothing.
std::optional<std::pair<float, NodeId>> scalar_of(const Graph& g, const Node& n) {
  if (n.op != Op::kMultiply || n.inputs.size() != 2) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    const Node& c = g.node(n.inputs[i]);
    if (float_constant(c) && c.value->size() == 1 && g.node(n.inputs[1 - i]).type.shape == n.type.shape)
      return std::make_pair((*c.value)[0], n.inputs[1 - i]);
  }
  return std::nullopt;
}

// The projection whose output, scaled and reshaped, is `id`, every node
// between read only on the way (so that it is dead once the attention reads
// the combined one).
std::optional<Projection> projection_of(const Graph& g, const std::vector<int>& readers, NodeId id) {
  Projection p;
  float scale = 1;
  for (;;) {
    const Node& n = g.node(id);
    if (readers[id] != 1) return std::nullopt;
    if (n.op == Op::kDense) break;
    if (n.op == Op::kReshape) {
      id = n.inputs[0];
    } else if (auto s = scalar_of(g, n)) {
      scale *= s->first;
      id = s->second;
    } else if (auto bias = p.bias ? std::nullopt : bias_of(g, n)) {
      p.bias = bias->first;
      p.bias_scale = scale;
      id = bias->second;
    } else {
      return std::nullopt;
    }
  }
  const Node& dense = g.node(id);
  const Node& w = g.node(dense.inputs[1]);
  if (!float_constant(w) || w.type.shape.size() != 2) return std::nullopt;
  p.x = dense.inputs[0];
  p.weight = &w;
  p.weight_scale = scale;
  return p;
}

// The value `id` reshapes: the first node behind its reshapes (the
// importers reshape the tokens once for each dense layer that reads them).
NodeId behind_reshapes(const Graph& g, NodeId id) {
  while (g.node(id).op == Op::kReshape) id = g.node(id).inputs[0];
  return id;
}

// The constants' values one after another, each scaled: the rows of (N, K)
// weights stacked, or biases of N joined.
runtime::NDArray stacked(const std::vector<std::pair<const Node*, float>>& parts) {
  Shape shape = parts[0].first->type.shape;
  shape[0] *= static_cast<int64_t>(parts.size());
  runtime::NDArray out(shape);
  int64_t at = 0;
  for (const auto& [part, scale] : parts)
    for (int64_t i = 0; i < part->value->size(); ++i) out[at++] = (*part->value)[i] * scale;
  return out;
}

}  // namespace

Graph combine_qkv_projections(const Graph& g) {
  const std::vector<int> readers = count_consumers(g);
  Rewriter r(g);
  for (const Node& n : g.nodes()) {
    if (n.op != Op::named("attention")) {
      r.copy(n);
      continue;
    }
    ops::AttentionAttrs a = n.attrs_as<ops::AttentionAttrs>();
    const Shape& q = g.node(n.inputs[0]).type.shape;
    // Self-attention (q, k and v of the same tokens and shape), sequence first.
    bool combinable = a.sequence_first && !a.packed && q.size() == 4;
    std::vector<Projection> qkv;
    for (size_t i = 0; i < 3 && combinable; ++i) {
      const std::optional<Projection> p = projection_of(g, readers, n.inputs[i]);
      combinable = p && g.node(n.inputs[i]).type.shape == q && p->weight->type.shape[0] == q[2] * q[3];
      if (!combinable) break;
      if (!qkv.empty()) {
        const Projection& first = qkv[0];
        combinable = behind_reshapes(g, p->x) == behind_reshapes(g, first.x) &&
                     g.node(p->x).type.shape == g.node(first.x).type.shape &&
                     p->weight->type.shape == first.weight->type.shape &&
                     (p->bias != nullptr) == (first.bias != nullptr);
      }
      qkv.push_back(*p);
    }
    if (!combinable) {
      r.copy(n);
      continue;
    }
    const NodeId weight = r.add_constant(n.name + ".qkv.weight", stacked({{qkv[0].weight, qkv[0].weight_scale},
                                                                          {qkv[1].weight, qkv[1].weight_scale},
                                                                          {qkv[2].weight, qkv[2].weight_scale}}));
    NodeId y = r.add(Op::kDense, n.name + ".qkv", {r.mapped(qkv[0].x), weight});
    if (qkv[0].bias) {
      const NodeId bias = r.add_constant(n.name + ".qkv.bias", stacked({{qkv[0].bias, qkv[0].bias_scale},
                                                                        {qkv[1].bias, qkv[1].bias_scale},
                                                                        {qkv[2].bias, qkv[2].bias_scale}}));
      y = r.add(Op::kAdd, n.name + ".qkv.bias", {y, bias});
    }
    // (tokens, 3 x heads x D) as (groups, sequence, 3, heads, D), given as q, k and v.
    const NodeId heads =
        r.add(Op::kReshape, n.name + ".qkv.heads", {y}, ops::ReshapeAttrs{{q[0], q[1], 3, q[2], q[3]}});
    std::vector<NodeId> inputs = {heads, heads, heads};
    if (a.has_mask) inputs.push_back(r.mapped(n.inputs[3]));
    a.packed = true;
    r.replace(n.id, r.add(n.op, n.name, std::move(inputs), a));
  }
  return r.finish();
}

}  // namespace tessera::graph
