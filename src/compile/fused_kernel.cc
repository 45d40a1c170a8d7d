#include "compile/fused_kernel.h"

#include <map>
#include <set>

#include "compile/node_expression.h"

namespace tessera::build {

using graph::Node;
using graph::NodeId;

FusedKernel fuse_kernel(const graph::Graph& g, const graph::FusedGroup& group, const OperandShape& operand_shape) {
  const std::set<NodeId> inside(group.nodes.begin(), group.nodes.end());
  std::map<NodeId, ir::Tensor> expr;
  std::map<const ir::TensorNode*, KernelOperand> operand_of;
  // The output of the last convolution (the anchor, or the projection after
  // a depthwise anchor) as its kernel declares it, and as the graph has it.
  graph::Shape view, anchor_shape = g.node(group.anchor()).type.shape;
  FusedKernel k;
  for (NodeId id : group.nodes) {
    const Node& n = g.node(id);
    std::vector<ir::Tensor> args;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const NodeId in = n.inputs[i];
      if (inside.count(in)) {
        args.push_back(expr.at(in));
        continue;
      }
      const KernelOperand operand{in, id, i};
      graph::Shape shape = operand_shape(operand);
      // Epilogue operands of the anchor's shape take its kernel's view of it
      // (a 1x1 convolution's output positions flattened: same memory).
      if (id != group.anchor() && id != group.projection && shape == anchor_shape && !view.empty()) shape = view;
      ir::Tensor p = ir::placeholder(shape, "p" + std::to_string(operand_of.size()),
                                     graph::storage_type(g.node(in).type.dtype));
      operand_of.emplace(p.get(), operand);
      args.push_back(p);
    }
    expr[id] = node_expression(g, n, args);
    if (id == group.anchor() || id == group.projection) {
      view = expr[id]->shape;
      anchor_shape = n.type.shape;
    }
    k.described += (k.described.empty() ? "" : " + ") + n.name;
    if (id != group.anchor()) k.epilogue += (k.epilogue.empty() ? "" : " + ") + graph::op_name(n.op);
  }
  k.dag = ir::ComputeDAG({expr.at(group.output())});
  for (const ir::Tensor& p : k.dag.placeholders()) k.operands.push_back(operand_of.at(p.get()));
  return k;
}

graph::Shape stored_operand_shape(const graph::Graph& g, const KernelOperand& operand) {
  const Node& source = g.node(operand.source);
  if (source.op != graph::Op::kConstant) return source.type.shape;
  return kernel_constant_shape(g, g.node(operand.reader), operand.index, source.type.shape);
}

}  // namespace tessera::build
