#include "graph/graph.h"

#include <set>

#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::graph {

std::string dtype_name(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return "float32";
    case DataType::kInt64: return "int64";
    case DataType::kInt8: return "int8";
    case DataType::kUInt8: return "uint8";
    case DataType::kInt32: return "int32";
  }
  return "unknown";
}

ir::DType storage_type(DataType dtype) {
  switch (dtype) {
    case DataType::kInt8: return ir::DType::Int8;
    case DataType::kUInt8: return ir::DType::UInt8;
    case DataType::kInt32: return ir::DType::Int32;
    default: return ir::DType::Float32;
  }
}

DataType data_type(ir::DType storage) {
  switch (storage) {
    case ir::DType::Int8: return DataType::kInt8;
    case ir::DType::UInt8: return DataType::kUInt8;
    case ir::DType::Int32: return DataType::kInt32;
    default: return DataType::kFloat32;
  }
}

std::string TensorType::to_string() const { return dtype_name(dtype) + ops::shape_to_string(shape); }

std::string Node::describe() const { return "node " + support::quoted(name) + " (" + op_name(op) + ")"; }

void Node::throw_wrong_attrs() const { throw Error(describe() + ": attributes of another operator kind"); }

NodeId Graph::add(Node node) {
  const NodeId id = static_cast<NodeId>(nodes_.size());
  node.id = id;
  if (node.name.empty()) throw Error("graph: node " + std::to_string(id) + " (" + op_name(node.op) + ") has no name");
  if (by_name_.count(node.name)) throw Error(node.describe() + ": the name is already taken by another node");
  for (NodeId in : node.inputs)
    if (in < 0 || in >= id)
      throw Error(node.describe() + ": input id " + std::to_string(in) +
                  " is not an earlier node (graphs are in topological order)");
  if (node.op == Op::kConstant && !node.value) throw Error(node.describe() + ": a constant without a value");
  by_name_[node.name] = id;
  nodes_.push_back(std::move(node));
  return id;
}

const Node& Graph::node(NodeId id) const {
  if (id < 0 || id >= static_cast<NodeId>(nodes_.size()))
    throw Error("graph: no node with id " + std::to_string(id) + " (" + std::to_string(nodes_.size()) + " nodes)");
  return nodes_[id];
}

Node& Graph::mutable_node(NodeId id) {
  node(id);  // bounds check
  return nodes_[id];
}

std::vector<NodeId> Graph::input_ids() const {
  std::vector<NodeId> ids;
  for (const Node& n : nodes_)
    if (n.op == Op::kInput) ids.push_back(n.id);
  return ids;
}

void Graph::set_outputs(std::vector<NodeId> outputs) {
  for (NodeId id : outputs) node(id);
  outputs_ = std::move(outputs);
}

void Graph::rename(NodeId id, const std::string& name) {
  Node& n = mutable_node(id);
  if (n.name == name) return;
  if (name.empty() || by_name_.count(name))
    throw Error(n.describe() + ": cannot be renamed to " + (name.empty() ? "nothing" : "a name another node has"));
  by_name_.erase(n.name);
  n.name = name;
  by_name_[name] = id;
}

std::optional<NodeId> Graph::find(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

bool is_depthwise(const Graph& graph, const Node& node) {
  if (node.op != Op::kConv2d || node.inputs.empty()) return false;
  return ops::is_depthwise_conv2d(node.attrs_as<Conv2dAttrs>(), graph.node(node.inputs[0]).type.shape);
}

ops::OperatorCall operator_call(const Graph& graph, const Node& node) {
  ops::OperatorCall call{node.attrs, {}, node.type.shape, {}};
  for (NodeId in : node.inputs) {
    call.input_shapes.push_back(graph.node(in).type.shape);
    call.constant_inputs.push_back(graph.node(in).op == Op::kConstant);
  }
  return call;
}

int64_t count_parameters(const Graph& graph) {
  std::set<NodeId> running_stats;
  for (const Node& n : graph.nodes())
    if (n.op == Op::kBatchNorm && n.inputs.size() == 5) {
      running_stats.insert(n.inputs[3]);
      running_stats.insert(n.inputs[4]);
    }
  int64_t total = 0;
  for (const Node& n : graph.nodes())
    if (n.op == Op::kConstant && !running_stats.count(n.id)) total += n.value->size();
  return total;
}

}  // namespace tessera::graph
