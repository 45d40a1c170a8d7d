#pragma once
// Which tuning task a fused kernel belongs to: its anchor's strategy on the
// target (ops/operator.h) names the AutoTVM template, and kernels that
// compute the same anchor with different epilogues share its records (filed
// under the anchor's workload key). Compile dispatches records by it; task
// extraction (driver/extract_tasks.h) collects the network's tasks with it.
#include <optional>
#include <string>

#include "autotvm/task.h"
#include "target/target.h"
#include "compile/fused_kernel.h"
#include "graph/fuse.h"
#include "graph/graph.h"
#include "ops/registry.h"

namespace tessera::build {

// The operator and arguments a template knows an anchor by, from its
// operator's strategy for the target (ops/operator.h); empty when the node is
// not tunable there (a pool, an NCHW grouped convolution, unequal strides).
struct TunableOperator {
  std::string op;
  ops::OpArgs args;
};
std::optional<TunableOperator> tunable_operator(const graph::Graph& g, const graph::Node& anchor,
                                                const target::Target& target);

// The workload key of the anchor alone (its epilogue left out, its
// operator's tuning_attrs in place of its own): equal for kernels that share
// a task. `half_storage` (a --dtype float16 build): the anchor with every
// tensor in half, a key of its own, so that records tuned in one precision
// never schedule the other's kernels.
std::string anchor_workload_key(const graph::Graph& g, graph::NodeId anchor, bool half_storage = false);

// The task of one fused kernel (its own DAG, as the build stores it, and its
// epilogue; its records filed under its anchor's workload key), when its
// anchor is tunable.
std::optional<autotvm::Task> kernel_task(const graph::Graph& g, const graph::FusedGroup& group,
                                         const FusedKernel& kernel, const target::Target& target,
                                         bool half_storage = false);

}  // namespace tessera::build
