#include "compile/kernel_task.h"

#include "ir/half_storage.h"
#include "tessera/error.h"

namespace tessera::build {

using graph::Node;
using graph::NodeId;

std::optional<TunableOperator> tunable_operator(const graph::Graph& g, const Node& n,
                                                const target::Target& target) {
  const ops::Strategy* strategy = n.op.definition().strategy_for(target.kind);
  if (!strategy || !strategy->tunable) return std::nullopt;
  std::optional<ops::TemplateCall> call = strategy->tunable(graph::operator_call(g, n));
  if (!call) return std::nullopt;
  return TunableOperator{call->op, call->args};
}

std::string anchor_workload_key(const graph::Graph& g, NodeId anchor, bool half_storage) {
  // Keyed by the attributes that change its speed (ops/operator.h).
  const auto& tuning_attrs = g.node(anchor).op.definition().tuning_attrs;
  graph::Graph keyed;
  if (tuning_attrs) {
    keyed = g;
    keyed.mutable_node(anchor).attrs = tuning_attrs(g.node(anchor).attrs);
  }
  const graph::Graph& of = tuning_attrs ? keyed : g;
  const FusedKernel alone = fuse_kernel(of, graph::FusedGroup{{anchor}},
                                        [&](const KernelOperand& o) { return stored_operand_shape(of, o); });
  return (half_storage ? ir::with_half_storage(alone.dag) : alone.dag).workload_key();
}

std::optional<autotvm::Task> kernel_task(const graph::Graph& g, const graph::FusedGroup& group,
                                         const FusedKernel& kernel, const target::Target& target, bool half_storage) {
  const std::optional<TunableOperator> op = tunable_operator(g, g.node(group.anchor()), target);
  if (!op || group.projection >= 0) return std::nullopt;  // no template schedules a depthwise + projection kernel
  ops::OpArgs args = op->args;
  if (half_storage) args.dtype = "float16";  // as its records name it
  try {
    autotvm::Task task = autotvm::create_task(op->op, args, kernel.dag, target, kernel.epilogue);
    task.record_key = anchor_workload_key(g, group.anchor(), half_storage);
    return task;
  } catch (const Error&) {
    return std::nullopt;  // no template schedules this instance (or its DAG): the hand-written schedule builds it
  }
}

}  // namespace tessera::build
