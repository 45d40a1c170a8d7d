#include "build/extract_tasks.h"

#include <fmt/format.h>

#include <map>

#include "build/build.h"
#include "build/node_expression.h"
#include "graph/blocked_conv.h"
#include "ops/dense.h"
#include "tessera/error.h"

namespace tessera::build {

using graph::Node;
using graph::NodeId;
using graph::Op;

namespace {

const graph::Shape& input_shape(const graph::Graph& g, const Node& n, size_t i) {
  return g.node(n.inputs[i]).type.shape;
}

std::optional<TunableOperator> tunable_conv(const graph::Graph& g, const Node& n) {
  const auto& a = n.attrs_as<graph::Conv2dAttrs>();
  if (!graph::is_blocked_conv(a) || a.stride_h != a.stride_w || a.dilation_h != a.dilation_w) return std::nullopt;
  const graph::Shape& d = input_shape(g, n, 0);  // (N, C/b, H, W, b)
  const graph::Shape& w = input_shape(g, n, 1);  // (O/o, I/i, KH, KW, i, o)
  if (d.size() != 5 || w.size() != 6) return std::nullopt;
  TunableOperator t;
  const bool depthwise = graph::is_depthwise(g, n);
  if (!depthwise && a.groups != 1) return std::nullopt;
  t.op = depthwise ? "depthwise_conv2d" : a.winograd_tile > 0 ? "conv2d_winograd" : "conv2d";
  t.args.winograd_tile = a.winograd_tile > 0 ? a.winograd_tile : t.args.winograd_tile;
  t.args.input = {d[0], d[1] * d[4], d[2], d[3]};
  t.args.weight =
      depthwise ? graph::Shape{w[0] * w[5], 1, w[2], w[3]} : graph::Shape{w[0] * w[5], w[1] * w[4], w[2], w[3]};
  t.args.stride = a.stride_h;
  t.args.dilation = a.dilation_h;
  t.args.padding = {a.pad_top, a.pad_left, a.pad_bottom, a.pad_right};
  t.args.layout = "NCHWc";
  t.args.ic_bn = d[4];
  t.args.oc_bn = w[5];
  return t;
}

// The anchor and the group's epilogue as text: "conv2d" + " + add + relu".
std::string operator_text(const autotvm::Task& t) { return t.epilogue.empty() ? t.op : t.op + " + " + t.epilogue; }

}  // namespace

std::optional<TunableOperator> tunable_operator(const graph::Graph& g, const Node& n) {
  switch (n.op) {
    case Op::kConv2d: return tunable_conv(g, n);
    case Op::kDense: {
      const graph::Shape &x = input_shape(g, n, 0), &w = input_shape(g, n, 1);
      if (x.size() != 2 || w.size() != 2 || g.node(n.inputs[1]).op != Op::kConstant) return std::nullopt;
      TunableOperator t{"dense", {}};
      t.args.input = x;
      t.args.weight = w;
      t.args.layout = "packed";
      t.args.oc_bn = ops::dense_pack_block(w[0]);
      return t;
    }
    case Op::kBatchMatmul: {
      TunableOperator t{"batch_matmul", {}};
      t.args.input = input_shape(g, n, 0);
      t.args.weight = input_shape(g, n, 1);
      return t;
    }
    default: return std::nullopt;
  }
}

std::string anchor_workload_key(const graph::Graph& g, NodeId anchor) {
  const FusedKernel alone =
      fuse_kernel(g, graph::FusedGroup{{anchor}}, [&](const KernelOperand& o) { return stored_operand_shape(g, o); });
  return alone.dag.workload_key();
}

std::optional<autotvm::Task> kernel_task(const graph::Graph& g, const graph::FusedGroup& group,
                                         const FusedKernel& kernel, const codegen::Target& target) {
  const std::optional<TunableOperator> op = tunable_operator(g, g.node(group.anchor()));
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
    if (!tunable_operator(optimized, optimized.node(group.anchor()))) continue;
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
