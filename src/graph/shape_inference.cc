#include "graph/shape_inference.h"

#include "tessera/error.h"

namespace tessera::graph {
namespace {

using ops::shape_to_string;

// The output shape of a node from its operator's definition.
Shape infer_shape(const Graph& graph, const Node& node) {
  if (node.op == Op::kInput) {
    for (int64_t d : node.type.shape)
      if (d <= 0) throw Error("shape " + shape_to_string(node.type.shape) + " has a non-positive dimension");
    return node.type.shape;
  }
  if (node.op == Op::kConstant) return node.value->shape();
  const ops::Operator& op = node.op.definition();
  const int expected = op.num_inputs;
  const auto count = static_cast<int>(node.inputs.size());
  if ((expected >= 0 && count != expected) || (expected < 0 && count < 1))
    throw Error("expects " +
                (expected < 0 ? std::string("at least one input") : std::to_string(expected) + " inputs") +
                ", got " + std::to_string(count));
  std::vector<Shape> in;
  for (NodeId id : node.inputs) in.push_back(graph.node(id).type.shape);
  return op.infer_shape(in, node.attrs);
}

// The node's element type: an input's and a constant's as given; an
// operator's from its inputs' storage (Operator::infer_dtype). An operator
// that says nothing of storage makes float32 from float32 inputs only.
DataType infer_dtype(const Graph& graph, const Node& node) {
  if (node.op == Op::kInput || node.op == Op::kConstant) return node.type.dtype;
  const ops::Operator& op = node.op.definition();
  std::vector<ir::DType> in;
  for (NodeId id : node.inputs) in.push_back(storage_type(graph.node(id).type.dtype));
  if (op.infer_dtype) return data_type(op.infer_dtype(in, node.attrs));
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != ir::DType::Float32)
      throw Error("input " + std::to_string(i) + " is " + ir::to_string(in[i]) + "; " + op.name +
                  " takes float32 (dequantize it first)");
  return DataType::kFloat32;
}

}  // namespace

TensorType infer_type(const Graph& graph, const Node& node) {
  try {
    TensorType type{infer_shape(graph, node), infer_dtype(graph, node)};
    ops::num_elements(type.shape);  // throws past 2^40 elements
    return type;
  } catch (const Error& e) {
    // Helpers from ops:: start their messages with the operator's name, and
    // Node::attrs_as with the node's description: both are said once.
    std::string message = e.what();
    for (const std::string& prefix : {node.describe() + ": ", op_name(node.op) + ": "})
      if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
    throw Error(node.describe() + ": " + message);
  }
}

void infer_shapes(Graph& graph) {
  for (NodeId id = 0; id < static_cast<NodeId>(graph.size()); ++id)
    graph.mutable_node(id).type = infer_type(graph, graph.node(id));
  if (graph.outputs().empty()) throw Error("graph: no outputs");
}

}  // namespace tessera::graph
