#include "build/extract_tasks.h"

#include <fmt/format.h>

#include <map>

#include "build/build.h"
#include "build/node_expression.h"
#include "ops/dense.h"
#include "tessera/error.h"

namespace tessera::build {

using graph::Node;
using graph::NodeId;
using graph::Op;

namespace {

// The anchor and the group's epilogue as text: "conv2d" + " + add + relu".
std::string operator_text(const autotvm::Task& t) { return t.epilogue.empty() ? t.op : t.op + " + " + t.epilogue; }

}  // namespace

std::optional<TunableOperator> tunable_operator(const graph::Graph& g, const Node& n,
                                                const codegen::Target& target) {
  const ops::Strategy* strategy = n.op.definition().strategy_for(target.kind);
  if (!strategy || !strategy->tunable) return std::nullopt;
  std::optional<ops::TemplateCall> call = strategy->tunable(graph::operator_call(g, n));
  if (!call) return std::nullopt;
  return TunableOperator{call->op, call->args};
}

std::string anchor_workload_key(const graph::Graph& g, NodeId anchor) {
  const FusedKernel alone =
      fuse_kernel(g, graph::FusedGroup{{anchor}}, [&](const KernelOperand& o) { return stored_operand_shape(g, o); });
  return alone.dag.workload_key();
}

std::optional<autotvm::Task> kernel_task(const graph::Graph& g, const graph::FusedGroup& group,
                                         const FusedKernel& kernel, const codegen::Target& target) {
  const std::optional<TunableOperator> op = tunable_operator(g, g.node(group.anchor()), target);
  if (!op || group.projection >= 0) return std::nullopt;  // no template schedules a depthwise + projection kernel
  try {
    autotvm::Task task = autotvm::create_task(op->op, op->args, kernel.dag, target, kernel.epilogue);
    task.record_key = anchor_workload_key(g, group.anchor());
    return task;
  } catch (const Error&) {
    return std::nullopt;  // no template schedules this instance (or its DAG): the hand-written schedule builds it
  }
}

std::vector<NetworkTask> extract_tasks(const graph::Graph& optimized, const codegen::Target& target) {
  std::vector<NetworkTask> tasks;
  std::map<std::string, size_t> task_of_anchor;
  for (const graph::FusedGroup& group : graph::fuse_operators(optimized)) {
    if (!tunable_operator(optimized, optimized.node(group.anchor()), target)) continue;
    const std::string anchor_key = anchor_workload_key(optimized, group.anchor());
    const std::string& anchor_name = optimized.node(group.anchor()).name;
    if (auto known = task_of_anchor.find(anchor_key); known != task_of_anchor.end()) {
      ++tasks[known->second].weight;
      tasks[known->second].nodes.push_back(anchor_name);
      continue;
    }
    const FusedKernel kernel =
        fuse_kernel(optimized, group, [&](const KernelOperand& o) { return stored_operand_shape(optimized, o); });
    std::optional<autotvm::Task> task = kernel_task(optimized, group, kernel, target);
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

std::vector<AutoTask> extract_auto_tasks(const graph::Graph& model, const codegen::Target& target,
                                         const BuildOptions& options) {
  BuildOptions formed = options;
  formed.compile = false;
  formed.history = nullptr;
  const BuildResult built = build(model, target, formed);
  std::vector<AutoTask> tasks;
  for (const KernelSummary& k : built.kernels) {
    std::string tag;
    for (const auto& t : k.dag.tensors())
      if (!t->is_placeholder()) tag += (tag.empty() ? "" : "+") + (t->tag.empty() ? std::string("compute") : t->tag);
    tasks.push_back({k.name, k.dag, k.calls, k.nodes, tag});
  }
  return tasks;
}

}  // namespace tessera::build
