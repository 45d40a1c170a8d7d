#include "driver/extract_tasks.h"

#include <fmt/format.h>

#include <map>

#include "compile/build.h"
#include "compile/half_storage_plan.h"
#include "compile/kernel_task.h"
#include "tessera/error.h"

namespace tessera::driver {

using build::BuildOptions;
using build::BuildResult;
using build::KernelSummary;

namespace {

// The anchor and the group's epilogue as text: "conv2d" + " + add + relu".
std::string operator_text(const autotvm::Task& t) { return t.epilogue.empty() ? t.op : t.op + " + " + t.epilogue; }

}  // namespace

std::vector<NetworkTask> extract_tasks(const graph::Graph& optimized, const target::Target& target,
                                       bool half_storage) {
  const build::HalfStoragePlan half(optimized, half_storage);
  std::vector<NetworkTask> tasks;
  std::map<std::string, size_t> task_of_anchor;
  for (const graph::FusedGroup& group : graph::fuse_operators(optimized)) {
    if (!build::tunable_operator(optimized, optimized.node(group.anchor()), target)) continue;
    const std::string anchor_key = build::anchor_workload_key(optimized, group.anchor(), half_storage);
    const std::string& anchor_name = optimized.node(group.anchor()).name;
    if (auto known = task_of_anchor.find(anchor_key); known != task_of_anchor.end()) {
      ++tasks[known->second].weight;
      tasks[known->second].nodes.push_back(anchor_name);
      continue;
    }
    build::FusedKernel kernel =
        build::fuse_kernel(optimized, group,
                           [&](const build::KernelOperand& o) { return build::stored_operand_shape(optimized, o); });
    kernel.dag = half.kernel_dag(kernel, group.output());
    std::optional<autotvm::Task> task = build::kernel_task(optimized, group, kernel, target, half_storage);
    if (!task) continue;
    task_of_anchor[anchor_key] = tasks.size();
    tasks.push_back(NetworkTask{std::move(*task), 1, {anchor_name}});
  }
  return tasks;
}

std::string print_tasks(const std::vector<NetworkTask>& tasks) {
  std::string s;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const NetworkTask& t = tasks[i];
    std::string nodes;
    for (size_t k = 0; k < t.nodes.size() && k < 4; ++k) nodes += (k ? ", " : "") + t.nodes[k];
    if (t.nodes.size() > 4) nodes += ", ...";
    s += fmt::format("========== Task {} (workload key: {}) ==========\n", i, t.task.workload_key());
    s += fmt::format("{} ({}): weight {} ({}), {:.1f} MFLOP, {} configs\n", t.task.describe(), operator_text(t.task),
                     t.weight, nodes, t.task.flop() / 1e6, t.task.space.size());
    s += t.task.workload.dag.print() + "\n";
  }
  return s;
}

std::vector<AutoTask> extract_auto_tasks(const graph::Graph& model, const target::Target& target,
                                         const BuildOptions& options) {
  BuildOptions formed = options;
  formed.compile = false;
  formed.history = nullptr;
  const BuildResult built = build::build(model, target, formed);
  std::vector<AutoTask> tasks;
  for (const KernelSummary& k : built.kernels) {
    std::string tag;
    for (const auto& t : k.dag.tensors())
      if (!t->is_placeholder()) tag += (tag.empty() ? "" : "+") + (t->tag.empty() ? std::string("compute") : t->tag);
    tasks.push_back({k.name, k.dag, k.calls, k.nodes, tag});
  }
  return tasks;
}

}  // namespace tessera::driver
