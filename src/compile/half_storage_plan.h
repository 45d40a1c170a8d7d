#pragma once
// Which values of a network a --dtype float16 build stores in half precision
// (BuildOptions::half_storage): the constants and every value between
// kernels, but never an input, an output, or what an output is a view of, so
// the caller's arrays stay float32. The build stores its tensors by it, and
// task extraction gives each tuning task the half DAG the build schedules.
#include <set>

#include "compile/fused_kernel.h"
#include "graph/graph.h"
#include "ir/compute_dag.h"

namespace tessera::build {

// A node whose output has its input's bytes in the same order (a reshape, a
// flatten, a layout_transform that moves no element): a view, no kernel.
bool keeps_bytes(const graph::Graph& g, const graph::Node& n);

class HalfStoragePlan {
 public:
  HalfStoragePlan(const graph::Graph& g, bool half_storage);
  bool enabled() const { return half_storage_; }
  // A view is stored as the value it views.
  bool stored_in_half(graph::NodeId id) const;
  // The kernel's DAG with its operands and its output (node `output`'s value)
  // stored as planned; the DAG itself when the plan is off.
  ir::ComputeDAG kernel_dag(const FusedKernel& kernel, graph::NodeId output) const;

 private:
  const graph::Graph& g_;
  bool half_storage_;
  std::set<graph::NodeId> float32_nodes_;  // the outputs and what they are views of
};

}  // namespace tessera::build
