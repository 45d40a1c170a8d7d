#pragma once
// Task extraction: the distinct tunable kernels of a network. Every fused
// kernel whose anchor an AutoTVM template schedules (conv2d and depthwise in
// NCHW[x]c, dense, batch_matmul) belongs to the task of its anchor's workload:
// kernels that compute the same convolution with different epilogues (relu;
// add + relu) share one task and its records, as the template's knobs do not
// depend on the epilogue. The task measures its first kernel, epilogue
// included, and files its records under the anchor's workload key, so that
// any kernel of that anchor finds them whatever its epilogue; its weight is
// how many kernels it stands for.
#include <optional>
#include <string>
#include <vector>

#include "autotvm/task.h"
#include "compile/build.h"
#include "compile/kernel_task.h"
#include "compile/fused_kernel.h"
#include "target/target.h"
#include "graph/graph.h"

namespace tessera::driver {

struct NetworkTask {
  autotvm::Task task;              // task.workload_key(): its anchor's workload key
  int weight = 0;                  // the kernels of the network it stands for
  std::vector<std::string> nodes;  // their anchors, in graph order
};

// The tasks of a graph after the passes (graph::optimize), in the order of
// their first kernel. `half_storage`: of a --dtype float16 build, each
// kernel's DAG in the storage that build gives it (compile/half_storage_plan.h).
std::vector<NetworkTask> extract_tasks(const graph::Graph& optimized, const target::Target& target,
                                       bool half_storage = false);

// The auto-scheduler's tasks: every distinct kernel a build of `model` makes
// (its own DAG, fused epilogue and all, in build order), weighted by how many
// times the graph calls it. `tag` is the same for kernels of the same kind
// (their compute stages' tags), which the task scheduler treats as similar.
struct AutoTask {
  std::string name;   // the kernel's symbol, e.g. "tessera_k3_conv2d"
  ir::ComputeDAG dag;
  int weight = 0;
  std::string nodes;  // the graph nodes it computes
  std::string tag;
};
// `options` as the network will be built (winograd, keep_layout, fuse).
std::vector<AutoTask> extract_auto_tasks(const graph::Graph& model, const target::Target& target,
                                         const build::BuildOptions& options);

// Each task as seed 001 prints it:
//   ========== Task 3 (workload key: ...) ==========
//   conv2d_NCHWc.x86 data=[...] ...  weight 4 (layer1.0.conv1, ...), 231.2 MFLOP
//   <the compute DAG>
std::string print_tasks(const std::vector<NetworkTask>& tasks);

}  // namespace tessera::driver
