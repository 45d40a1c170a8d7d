#pragma once
// One fused group of an optimized graph as the compute DAG of one kernel:
// the anchor's declaration with its elementwise epilogue composed on top.
// The build compiles these; task extraction tunes them.
#include <functional>
#include <string>
#include <vector>

#include "graph/fuse.h"
#include "graph/graph.h"
#include "ir/compute_dag.h"

namespace tessera::build {

// A value the kernel reads from outside its group: node `source`'s value, as
// input `index` of node `reader` (inside the group) wants it.
struct KernelOperand {
  graph::NodeId source;
  graph::NodeId reader;
  size_t index;
};

struct FusedKernel {
  ir::ComputeDAG dag;
  std::vector<KernelOperand> operands;  // one per dag.placeholders(), in that order
  std::string described;                // "layer1.0.conv2 + layer1.0.add + layer1.0.relu"
  std::string epilogue;                 // the ops after the anchor: "add + relu", or ""
};

// The shape the kernel sees an operand in (a constant may be stored packed,
// see kernel_constant).
using OperandShape = std::function<graph::Shape(const KernelOperand&)>;

// Throws tessera::Error naming the node when no kernel can be declared.
FusedKernel fuse_kernel(const graph::Graph& g, const graph::FusedGroup& group, const OperandShape& operand_shape);

// The operand shapes of a build: constants as kernel_constant stores them,
// other values as the graph has them.
graph::Shape stored_operand_shape(const graph::Graph& g, const KernelOperand& operand);

}  // namespace tessera::build
