// attention_sequence_first (passes.h): an attention whose q, k and v are each
// reshape(transpose(x, [0, 2, 1, 3])) of a (groups, sequence, heads, D)
// tensor x, as exports of a transformer split a dense layer's output into
// heads, reads the three x instead (ops/attention.h, sequence_first): the
// three transposes were copy kernels of their own. Its output then is
// (groups, M, heads, D), which is what the transpose back after it, in
// the same exports, computed: that transpose becomes the attention itself.
// Elsewhere the (B, M, D) value is made of it as before by one transpose.
#include <algorithm>
#include <map>

#include "graph/passes.h"
#include "graph/rewriter.h"
#include "ops/attention.h"
#include "ops/transform.h"

namespace tessera::graph {
namespace {

const std::vector<int64_t> kSwapSequenceAndHeads = {0, 2, 1, 3};

bool swaps_sequence_and_heads(const Node& n) {
  return n.op == Op::kTranspose && n.attrs_as<ops::TransposeAttrs>().perm == kSwapSequenceAndHeads;
}

// x when `id` is reshape(transpose(x, [0, 2, 1, 3])) to (groups * heads,
// rows, D) of x (groups, rows, heads, D); else -1.
NodeId sequence_first_source(const Graph& g, NodeId id) {
  const Node& reshape = g.node(id);
  if (reshape.op != Op::kReshape) return -1;
  const Node& transpose = g.node(reshape.inputs[0]);
  if (!swaps_sequence_and_heads(transpose)) return -1;
  const Shape& x = g.node(transpose.inputs[0]).type.shape;
  if (x.size() != 4 || reshape.type.shape != Shape{x[0] * x[2], x[1], x[3]}) return -1;
  return transpose.inputs[0];
}

}  // namespace

Graph attention_sequence_first(const Graph& g) {
  Rewriter r(g);
  std::map<NodeId, NodeId> sequence_first;  // old attention -> its new sequence-first node
  for (const Node& n : g.nodes()) {
    if (n.op == Op::named("attention") && !n.attrs_as<ops::AttentionAttrs>().sequence_first) {
      ops::AttentionAttrs a = n.attrs_as<ops::AttentionAttrs>();
      std::vector<NodeId> inputs;
      for (size_t i = 0; i < 3; ++i) inputs.push_back(sequence_first_source(g, n.inputs[i]));
      // The heads the transposes split off: the attention's own, or, where
      // it counts one and has no mask (scores of three axes, (B, M, N): no
      // axis said which rows are heads), any.
      auto heads = [&](NodeId x) { return g.node(x).type.shape[2]; };
      const bool sources = std::find(inputs.begin(), inputs.end(), NodeId{-1}) == inputs.end();
      if (!sources || heads(inputs[1]) != heads(inputs[0]) || heads(inputs[2]) != heads(inputs[0]) ||
          (heads(inputs[0]) != a.heads && (a.heads != 1 || a.has_mask))) {
        r.copy(n);
        continue;
      }
      a.heads = heads(inputs[0]);
      for (NodeId& x : inputs) x = r.mapped(x);
      if (a.has_mask) inputs.push_back(r.mapped(n.inputs[3]));
      a.sequence_first = true;
      const NodeId out = r.add(Op::named("attention"), n.name, std::move(inputs), a);
      sequence_first[n.id] = out;
      const NodeId heads_first =
          r.add(Op::kTranspose, n.name + ".heads_first", {out}, ops::TransposeAttrs{kSwapSequenceAndHeads});
      r.replace(n.id, r.add(Op::kReshape, n.name + ".rows", {heads_first}, ops::ReshapeAttrs{n.type.shape}));
      continue;
    }
    // transpose(reshape(attention), [0, 2, 1, 3]) back to (groups, M,
    // heads, D): the sequence-first attention itself.
    if (swaps_sequence_and_heads(n)) {
      const Node& reshape = g.node(n.inputs[0]);
      const auto it = reshape.op == Op::kReshape ? sequence_first.find(reshape.inputs[0]) : sequence_first.end();
      if (it != sequence_first.end() && r.node(it->second).type.shape == n.type.shape) {
        r.replace(n.id, it->second);
        continue;
      }
    }
    r.copy(n);
  }
  return r.finish();
}

}  // namespace tessera::graph
