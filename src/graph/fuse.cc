#include "graph/fuse.h"

#include "graph/rewriter.h"

namespace tessera::graph {
namespace {

bool is_elementwise(Op op) {
  return op == Op::kAdd || op == Op::kMultiply || op == Op::kRelu || op == Op::kClip || op == Op::kSigmoid ||
         op == Op::kBiasAdd;
}

// Anchors whose kernels take an elementwise epilogue.
bool takes_epilogue(Op op) {
  return op == Op::kConv2d || op == Op::kDense || op == Op::kBatchMatmul || is_elementwise(op);
}

}  // namespace

std::vector<FusedGroup> fuse_operators(const Graph& g) {
  const std::vector<int> consumers = count_consumers(g);
  std::vector<int> group_of(g.size(), -1);
  std::vector<FusedGroup> groups;
  for (const Node& n : g.nodes()) {
    if (n.op == Op::kInput || n.op == Op::kConstant) continue;
    if (is_elementwise(n.op)) {
      // Join the group whose last node is one of our inputs, read by us alone,
      // of our own shape (no broadcasting grows it).
      for (NodeId in : n.inputs) {
        const int gi = group_of[in];
        if (gi < 0 || groups[gi].output() != in || consumers[in] != 1) continue;
        if (g.node(in).type.shape != n.type.shape || !takes_epilogue(g.node(groups[gi].anchor()).op)) continue;
        // Every other input must be computed before this group's kernel runs
        // (by an earlier group, or given): groups run in their order.
        bool ready = true;
        for (NodeId other : n.inputs)
          if (other != in && group_of[other] >= gi) ready = false;
        if (!ready) continue;
        groups[gi].nodes.push_back(n.id);
        group_of[n.id] = gi;
        break;
      }
      if (group_of[n.id] >= 0) continue;
    }
    group_of[n.id] = static_cast<int>(groups.size());
    groups.push_back(FusedGroup{{n.id}});
  }
  return groups;
}

}  // namespace tessera::graph
