// move_elementwise_before_reshape (passes.h). The importers compute a MatMul
// of a (batch, tokens, K) activation as reshape -> dense -> reshape; the bias
// add, GELU and residual add that follow read the last reshape, so they
// cannot join the dense as its epilogue and each costs a pass over memory.
// Moved before the reshape (which only renames the bytes), they do. A scale
// by a scalar moves before a transpose as well (attention's 1/sqrt(d) on the
// queries and keys, after the heads are split off).
#include <algorithm>

#include "graph/passes.h"
#include "graph/rewriter.h"
#include "ops/operator.h"
#include "ops/transform.h"

namespace tessera::graph {
namespace {

// Whether `n` is an elementwise operator that follows any shape: unary, or
// binary with NumPy broadcasting (bias_add names an axis, where has three inputs).
bool is_shapeless_elementwise(const Node& n) {
  if (n.op == Op::kInput || n.op == Op::kConstant) return false;
  if (n.op.definition().pattern != ops::FusionPattern::kElementwise) return false;
  if (n.op == Op::named("bias_add")) return false;
  return n.inputs.size() == 1 || n.inputs.size() == 2;
}

// The shape without its leading ones.
Shape trimmed(const Shape& s) {
  auto first = std::find_if(s.begin(), s.end(), [](int64_t d) { return d != 1; });
  return Shape(first, s.end());
}

class Mover {
 public:
  explicit Mover(const Graph& g) : g_(g) {}

  // Whether `n` reads a reshape through which it can move: then `reshaped`
  // is that input's index.
  bool movable(const Node& n, size_t& reshaped) const {
    if (!is_shapeless_elementwise(n)) return false;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Node& r = g_.node(n.inputs[i]);
      if (r.type.shape != n.type.shape) continue;
      if (r.op == Op::kTranspose) {  // only scalars beside it
        bool scalars = true;
        for (size_t j = 0; j < n.inputs.size(); ++j)
          if (j != i) scalars = scalars && trimmed(g_.node(n.inputs[j]).type.shape).empty();
        if (scalars && joins_epilogue(r.inputs[0])) {
          reshaped = i;
          return true;
        }
        continue;
      }
      if (r.op != Op::kReshape) continue;
      // Only towards a kernel an epilogue can join; and not when another
      // operand is such a kernel behind a reshape too (the two would trade
      // places round after round).
      if (!joins_epilogue(r.inputs[0])) continue;
      bool ambiguous = false;
      for (size_t j = 0; j < n.inputs.size(); ++j) {
        const Node& o = g_.node(n.inputs[j]);
        ambiguous = ambiguous || (j != i && o.op == Op::kReshape && joins_epilogue(o.inputs[0]));
      }
      if (ambiguous) continue;
      const Node& x = g_.node(r.inputs[0]);
      bool others_fit = true;
      for (size_t j = 0; j < n.inputs.size(); ++j)
        if (j != i) others_fit = others_fit && fits(g_.node(n.inputs[j]).type.shape, n.type.shape, x.type.shape);
      if (others_fit) {
        reshaped = i;
        return true;
      }
    }
    return false;
  }

 private:
  // A kernel's output whose kernel an elementwise node can join: a matrix
  // product or convolution (anchor), or an elementwise node, or a reshape
  // or transpose in front of one (a later round moves on through it).
  bool joins_epilogue(NodeId id) const {
    const Node& n = g_.node(id);
    if (n.op == Op::kInput || n.op == Op::kConstant) return false;
    if (n.op == Op::kReshape || n.op == Op::kTranspose) return joins_epilogue(n.inputs[0]);
    const ops::FusionPattern p = n.op.definition().pattern;
    return p == ops::FusionPattern::kAnchor || p == ops::FusionPattern::kElementwise;
  }

  // An operand of shape `s` beside the reshape's output `out` can read the
  // reshape's input `in` instead: the same shape (read through a reshape of
  // its own), or a row (or scalar) along a last axis both shapes share.
  static bool fits(const Shape& s, const Shape& out, const Shape& in) {
    if (s == out) return true;
    const Shape t = trimmed(s);
    if (t.empty()) return true;
    return t.size() == 1 && !out.empty() && !in.empty() && t[0] == out.back() && t[0] == in.back();
  }

  const Graph& g_;
};

}  // namespace

Graph move_elementwise_before_reshape(const Graph& graph) {
  Graph g = graph;
  // Each round moves every movable node one reshape up (a chain of bias,
  // GELU and residual takes a round per link) and collapses the chains of
  // reshapes that leaves.
  for (int round = 0; round < 16; ++round) {
    const Mover mover(g);
    Rewriter r(g);
    bool moved = false;
    for (const Node& n : g.nodes()) {
      if (n.op == Op::kReshape) {  // a reshape of a reshape is one; to the same shape, none
        const NodeId in = r.mapped(n.inputs[0]);
        const Node& inner = r.node(in);
        const NodeId source = inner.op == Op::kReshape ? inner.inputs[0] : in;
        if (r.node(source).type.shape == n.type.shape) {
          r.replace(n.id, source);
        } else if (source != in) {
          r.replace(n.id, r.add(Op::kReshape, n.name, {source}, ops::ReshapeAttrs{n.type.shape}));
        } else {
          r.copy(n);
        }
        continue;
      }
      size_t i = 0;
      if (!mover.movable(n, i)) {
        r.copy(n);
        continue;
      }
      const Node& reshape = g.node(n.inputs[i]);
      const Shape& in = g.node(reshape.inputs[0]).type.shape;
      std::vector<NodeId> operands;
      for (size_t j = 0; j < n.inputs.size(); ++j) {
        const Node& o = g.node(n.inputs[j]);
        if (j == i) {
          operands.push_back(r.mapped(reshape.inputs[0]));
        } else if (o.type.shape == n.type.shape) {
          operands.push_back(r.add(Op::kReshape, o.name + ".rows", {r.mapped(o.id)}, ops::ReshapeAttrs{in}));
        } else {  // a row or a scalar: as a row of the last axis, or as it is
          const Shape t = trimmed(o.type.shape);
          operands.push_back(t.empty() ? r.mapped(o.id)
                                       : r.add(Op::kReshape, o.name + ".row", {r.mapped(o.id)},
                                               ops::ReshapeAttrs{t}));
        }
      }
      const bool renamed = n.name.size() > 5 && n.name.compare(n.name.size() - 5, 5, ".rows") == 0;
      const NodeId moved_node = r.add(n.op, renamed ? n.name : n.name + ".rows", std::move(operands), n.attrs);
      r.replace(n.id, reshape.op == Op::kTranspose
                          ? r.add(Op::kTranspose, n.name, {moved_node}, reshape.attrs)
                          : r.add(Op::kReshape, n.name, {moved_node}, ops::ReshapeAttrs{n.type.shape}));
      moved = true;
    }
    g = eliminate_dead_nodes(r.finish());
    if (!moved) break;
  }
  return g;
}

}  // namespace tessera::graph
