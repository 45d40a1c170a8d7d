// recognize_attention (passes.h): scaled dot-product attention as the
// importers leave it, batch_matmul(Q, K) -> [reshape] -> [scale] -> [mask
// add] -> softmax over keys -> [reshape] -> batch_matmul(P, V^T), becomes one
// attention node: one kernel that computes the scores a tile of query rows
// at a time instead of writing the (batch, M, N) score matrix to memory and
// reading it back three times.
#include <algorithm>
#include <optional>

#include "graph/passes.h"
#include "graph/pattern.h"
#include "graph/rewriter.h"
#include "ops/attention.h"
#include "ops/softmax.h"
#include "ops/transform.h"

namespace tessera::graph {
namespace {

// A mask's shape as (groups, heads, M, N) for scores of `rank` axes: (B,
// M, N) scores have one group per row of B and one head.
Shape mask4(Shape mask, size_t rank) {
  mask.insert(mask.begin(), rank - std::min(rank, mask.size()), 1);
  if (rank == 3) mask.insert(mask.begin() + 1, 1);
  return mask;
}

struct Match {
  NodeId q = -1, k = -1, v_nt = -1;  // v_nt: (B, D, N), batch_matmul's second operand
  std::optional<NodeId> mask;
  Shape scores4;  // the scores as (groups, heads, M, N)
  size_t rank = 4;  // of the scores the softmax reads
  double scale = 1.0;
};

class AttentionMatcher {
 public:
  AttentionMatcher(const Graph& g) : g_(g), consumers_(count_consumers(g)) {}

  std::optional<Match> match(const Node& out) const {
    if (out.op != Op::named("batch_matmul")) return std::nullopt;
    Match m;
    m.v_nt = out.inputs[1];
    NodeId at = through_reshapes(out.inputs[0]);
    const std::optional<NodeId> guarded = nan_guarded(at);
    if (guarded) at = *guarded;
    const Node& softmax = g_.node(at);
    if (softmax.op != Op::named("softmax") || consumers_[static_cast<size_t>(at)] != (guarded ? 2 : 1))
      return std::nullopt;
    const int64_t rank = static_cast<int64_t>(softmax.type.shape.size());
    const int64_t axis = softmax.attrs_as<ops::SoftmaxAttrs>().axis;
    if (axis != -1 && axis != rank - 1) return std::nullopt;
    m.rank = static_cast<size_t>(rank);
    if (rank == 4) m.scores4 = softmax.type.shape;
    else if (rank == 3) m.scores4 = {softmax.type.shape[0], 1, softmax.type.shape[1], softmax.type.shape[2]};
    else return std::nullopt;
    at = softmax.inputs[0];
    // Back to the product: a mask added and scales, in either order.
    for (int step = 0; step < 4; ++step) {
      at = through_reshapes(at);
      const Node& n = g_.node(at);
      if (!only_reader(at)) return std::nullopt;
      if (n.op == Op::named("batch_matmul")) break;
      if (n.op == Op::kMultiply || n.op == Op::named("divide")) {
        const std::optional<NodeId> x = scaled_input(n, m);
        if (!x) return std::nullopt;
        at = *x;
        continue;
      }
      if (n.op == Op::kAdd && !m.mask) {
        const int side = mask_side(n, m);
        if (side < 0) return std::nullopt;
        m.mask = n.inputs[side];
        at = n.inputs[1 - side];
        continue;
      }
      return std::nullopt;
    }
    const Node& product = g_.node(at);
    if (product.op != Op::named("batch_matmul")) return std::nullopt;
    m.q = product.inputs[0];
    m.k = product.inputs[1];
    const Shape& s = product.type.shape;  // (B, M, N)
    if (s[0] != m.scores4[0] * m.scores4[1] || s[1] != m.scores4[2] || s[2] != m.scores4[3]) return std::nullopt;
    return m;
  }

 private:
  NodeId through_reshapes(NodeId id) const {
    while (g_.node(id).op == Op::kReshape && only_reader(id)) id = g_.node(id).inputs[0];
    return id;
  }
  bool only_reader(NodeId id) const { return consumers_[static_cast<size_t>(id)] == 1; }

  // P when `id` is where(is_nan(P), 0, P): PyTorch's decomposition of masked
  // attention zeroes the probabilities of a query whose every key is masked
  // (-inf scores). The guard is dropped with the rest of the pattern: the
  // attention kernel's rows never see such a query in the masks models build
  // (finite minima, or -inf on some keys only).
  std::optional<NodeId> nan_guarded(NodeId id) const {
    const Node& w = g_.node(id);
    if (w.op != Op::named("where") || !only_reader(id)) return std::nullopt;
    const Node& test = g_.node(w.inputs[0]);
    const auto zero = pattern::scalar(g_, w.inputs[1]);
    if (test.op != Op::named("is_nan") || !only_reader(w.inputs[0]) || test.inputs[0] != w.inputs[2] || !zero ||
        *zero != 0.0f || g_.node(w.inputs[2]).type.shape != w.type.shape)
      return std::nullopt;
    return w.inputs[2];
  }

  // x when n is x * c, c * x or x / c for a constant c of one element; the
  // scale is multiplied in.
  std::optional<NodeId> scaled_input(const Node& n, Match& m) const {
    for (int i = 0; i < 2; ++i) {
      if (n.op == Op::named("divide") && i == 0) continue;  // only x / c
      const auto c = pattern::scalar(g_, n.inputs[i]);
      if (!c) continue;
      if (n.op == Op::named("divide")) {
        if (*c == 0.0f) return std::nullopt;
        m.scale /= *c;
      } else {
        m.scale *= *c;
      }
      return n.inputs[1 - i];
    }
    return std::nullopt;
  }

  // Which input of the add is a mask broadcasting to the scores (the other
  // having their shape), or -1. The other may also be the scores before the
  // reshape into (groups, heads, M, N) where the add has that shape: a
  // mask of one element moves before the reshape (move_elementwise_before_reshape)
  // and still broadcasts the add to it (one query of one key).
  int mask_side(const Node& add, const Match& m) const {
    for (int i = 0; i < 2; ++i) {
      const Shape& given = g_.node(add.inputs[i]).type.shape;
      const Shape& other = g_.node(add.inputs[1 - i]).type.shape;
      const bool scores = other == add.type.shape || (m.rank == 4 && add.type.shape == m.scores4 &&
                                                      ops::num_elements(other) == ops::num_elements(add.type.shape));
      if (!scores || given.size() > m.rank) continue;
      const Shape mask = mask4(given, m.rank);
      bool fits = true;
      for (size_t d = 0; d < 4; ++d) fits = fits && (mask[d] == 1 || mask[d] == m.scores4[d]);
      if (fits) return i;
    }
    return -1;
  }

  const Graph& g_;
  std::vector<int> consumers_;
};

// batch_matmul's (B, D, N) operand as (B, N, D) in the new graph: the
// transpose it was made of, skipped, or a transpose added.
NodeId values(const Graph& g, Rewriter& r, NodeId v_nt, const std::string& name) {
  const Shape& nt = g.node(v_nt).type.shape;
  const Shape want = {nt[0], nt[2], nt[1]};
  const Node& reshape = g.node(v_nt);
  if (reshape.op == Op::kReshape) {
    const Node& t = g.node(reshape.inputs[0]);
    const Shape& ts = t.type.shape;  // (..., D, N), its leading axes merged into B
    if (t.op == Op::kTranspose && ts.size() >= 2 && ts[ts.size() - 2] == nt[1] && ts.back() == nt[2]) {
      const std::vector<int64_t>& perm = t.attrs_as<ops::TransposeAttrs>().perm;
      const size_t rank = perm.size();
      bool swaps_last_two = rank >= 2 && perm[rank - 2] == static_cast<int64_t>(rank - 1) &&
                            perm[rank - 1] == static_cast<int64_t>(rank - 2);
      for (size_t i = 0; i + 2 < rank; ++i) swaps_last_two = swaps_last_two && perm[i] == static_cast<int64_t>(i);
      if (swaps_last_two) return r.add(Op::kReshape, name, {r.mapped(t.inputs[0])}, ops::ReshapeAttrs{want});
    }
  }
  return r.add(Op::kTranspose, name, {r.mapped(v_nt)}, ops::TransposeAttrs{{0, 2, 1}});
}

}  // namespace

Graph recognize_attention(const Graph& g) {
  const AttentionMatcher matcher(g);
  Rewriter r(g);
  for (const Node& n : g.nodes()) {
    const std::optional<Match> m = matcher.match(n);
    if (!m) {
      r.copy(n);
      continue;
    }
    // V as (B, N, D): batch_matmul was given it transposed, usually as the
    // importer's reshape of a transpose of the heads' values (undone here).
    const NodeId v = values(g, r, m->v_nt, n.name + ".values");
    std::vector<NodeId> inputs = {r.mapped(m->q), r.mapped(m->k), v};
    if (m->mask) {
      const Shape mask = mask4(g.node(*m->mask).type.shape, m->rank);
      inputs.push_back(r.add(Op::kReshape, n.name + ".mask", {r.mapped(*m->mask)}, ops::ReshapeAttrs{mask}));
    }
    ops::AttentionAttrs a;
    a.scale = m->scale;
    a.heads = m->scores4[1];
    a.has_mask = m->mask.has_value();
    r.replace(n.id, r.add(Op::named("attention"), n.name, std::move(inputs), a));
  }
  return r.finish();
}

}  // namespace tessera::graph
