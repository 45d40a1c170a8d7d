// compose_transposes (passes.h): a transpose of a transpose is one transpose,
// and none when the two undo each other, as batch_matmul's (batch, N, K)
// operand made of an exported K^T does. Each would be a copy kernel.
#include "graph/passes.h"
#include "graph/rewriter.h"
#include "ops/transform.h"

namespace tessera::graph {
namespace {

// The permutation a transpose of `rank` axes applies (empty: reversed).
std::vector<int64_t> perm_of(const Node& n, size_t rank) {
  std::vector<int64_t> perm = n.attrs_as<ops::TransposeAttrs>().perm;
  if (perm.empty())
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  return perm;
}

}  // namespace

Graph compose_transposes(const Graph& g) {
  Rewriter r(g);
  for (const Node& n : g.nodes()) {
    if (n.op != Op::kTranspose) {
      r.copy(n);
      continue;
    }
    const NodeId inner_id = r.mapped(n.inputs[0]);
    const Node& inner = r.node(inner_id);
    if (inner.op != Op::kTranspose) {
      r.copy(n);
      continue;
    }
    // Output axis i is the inner transpose's axis outer[i], which is x's axis inner[outer[i]].
    const size_t rank = n.type.shape.size();
    const std::vector<int64_t> outer = perm_of(n, rank), first = perm_of(inner, rank);
    std::vector<int64_t> perm(rank);
    for (size_t i = 0; i < rank; ++i) perm[i] = first[static_cast<size_t>(outer[i])];
    const NodeId x = inner.inputs[0];
    r.replace(n.id, ops::is_identity_permutation(perm) ? x
                                                       : r.add(Op::kTranspose, n.name, {x}, ops::TransposeAttrs{perm}));
  }
  return r.finish();
}

}  // namespace tessera::graph
