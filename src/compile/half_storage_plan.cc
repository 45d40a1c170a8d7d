#include "compile/half_storage_plan.h"

#include "ir/half_storage.h"

namespace tessera::build {

bool keeps_bytes(const graph::Graph& g, const graph::Node& n) {
  const ops::Operator& op = n.op.definition();
  return op.keeps_bytes && op.keeps_bytes(graph::operator_call(g, n));
}

HalfStoragePlan::HalfStoragePlan(const graph::Graph& g, bool half_storage) : g_(g), half_storage_(half_storage) {
  for (graph::NodeId out : g.outputs())
    for (graph::NodeId n = out; float32_nodes_.insert(n).second && keeps_bytes(g, g.node(n));) n = g.node(n).inputs[0];
}

bool HalfStoragePlan::stored_in_half(graph::NodeId id) const {
  const graph::Node& n = g_.node(id);
  if (!half_storage_ || float32_nodes_.count(id) || n.op == graph::Op::kInput) return false;
  if (n.op != graph::Op::kConstant && keeps_bytes(g_, n)) return stored_in_half(n.inputs[0]);
  return true;
}

ir::ComputeDAG HalfStoragePlan::kernel_dag(const FusedKernel& kernel, graph::NodeId output) const {
  if (!half_storage_) return kernel.dag;
  std::vector<bool> keep_float32;
  for (const KernelOperand& o : kernel.operands) keep_float32.push_back(!stored_in_half(o.source));
  return ir::with_half_storage(kernel.dag, keep_float32, !stored_in_half(output));
}

}  // namespace tessera::build
