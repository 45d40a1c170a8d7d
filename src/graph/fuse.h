#pragma once
// Operator fusion: which nodes of an optimized graph compute together in one
// kernel. A group is an anchor (a convolution, a dense, a pooling, any
// operator that is not elementwise) followed by a chain of elementwise
// operators (bias, residual add, relu, clip, ...), each the only reader of
// the one before it, so that the intermediate values never reach memory.
// Chains of elementwise operators without an anchor fuse the same way.
#include <vector>

#include "graph/graph.h"

namespace tessera::graph {

struct FusedGroup {
  std::vector<NodeId> nodes;  // in order; the last one's value leaves the kernel
  NodeId anchor() const { return nodes.front(); }
  NodeId output() const { return nodes.back(); }
};

// Every node other than inputs and constants lands in exactly one group;
// groups come in an order in which each reads only earlier groups' outputs.
std::vector<FusedGroup> fuse_operators(const Graph& graph);

}  // namespace tessera::graph
