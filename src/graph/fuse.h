#pragma once
// Operator fusion: which nodes of an optimized graph compute together in one
// kernel. A group is an anchor (a convolution, a dense, a pooling, any
// operator that is not elementwise) followed by a chain of elementwise
// operators (bias, residual add, relu, clip, ...), each the only reader of
// the one before it, so that the intermediate values never reach memory.
// Chains of elementwise operators without an anchor fuse the same way.
//
// A depthwise 3x3 convolution's group (from an output size on, see
// FuseOptions) also takes the 1x1 convolution that alone reads it
// (MobileNet-v2's projection) with that one's epilogue: one kernel
// (schedule/depthwise_projection_tile.h) in which the depthwise output never
// reaches memory.
#include <vector>

#include "graph/graph.h"

namespace tessera::graph {

struct FusedGroup {
  std::vector<NodeId> nodes;  // in order; the last one's value leaves the kernel
  NodeId projection = -1;     // the 1x1 convolution joined after a depthwise anchor, or -1
  NodeId anchor() const { return nodes.front(); }
  NodeId output() const { return nodes.back(); }
};

struct FuseOptions {
  // Depthwise + projection groups for outputs of at least this many rows
  // (0: never). 56: MobileNet-v2's blocks 1-3, whose depthwise outputs (1.2
  // to 1.8 MB) otherwise go through L3. Measured on Zen 3, 1 thread, tuned
  // records for the other kernels, min of 8 interleaved runs. 8-row tiles:
  // unfused 7.98 ms, from 56 rows 7.83, from 28 rows 7.90, every block 8.37
  // (at 14x14 and 7x7 the separate 1x1 kernels' buffered multi-chunk tiles
  // win). 4-row tiles: unfused 8.23, from 56 rows 7.68.
  int64_t depthwise_projection_min_rows = 56;
};

// Every node other than inputs and constants lands in exactly one group;
// groups come in an order in which each reads only earlier groups' outputs.
std::vector<FusedGroup> fuse_operators(const Graph& graph, const FuseOptions& options = {});

}  // namespace tessera::graph
