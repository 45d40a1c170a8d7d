#include "graph/rewriter.h"

#include "graph/shape_inference.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::graph {

NodeId Rewriter::mapped(NodeId id) const {
  if (id < 0 || id >= static_cast<NodeId>(mapped_.size()) || mapped_[id] < 0)
    throw Error("graph pass: node " + std::to_string(id) + " is used before it was rewritten");
  return mapped_[id];
}

NodeId Rewriter::copy(const Node& node) {
  Node n = node;
  for (NodeId& in : n.inputs) in = mapped(in);
  n.name = unique_name(node.name);
  n.type = infer_type(graph_, n);
  const NodeId id = graph_.add(std::move(n));
  mapped_[node.id] = id;
  return id;
}

void Rewriter::replace(NodeId id, NodeId to) { mapped_.at(id) = to; }

NodeId Rewriter::add(Op op, const std::string& name, std::vector<NodeId> inputs, Attrs attrs) {
  Node n;
  n.op = op;
  n.name = unique_name(name);
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  n.type = infer_type(graph_, n);
  return graph_.add(std::move(n));
}

NodeId Rewriter::add_constant(const std::string& name, runtime::NDArray value, DataType dtype) {
  Node n;
  n.op = Op::kConstant;
  n.name = unique_name(name);
  n.value = std::make_shared<const runtime::NDArray>(std::move(value));
  n.type.dtype = dtype;
  n.type = infer_type(graph_, n);
  return graph_.add(std::move(n));
}

NodeId Rewriter::add_input(const std::string& name, TensorType type) {
  Node n;
  n.op = Op::kInput;
  n.name = name;
  n.type = std::move(type);
  return graph_.add(std::move(n));
}

std::string Rewriter::unique_name(const std::string& name) const {
  if (!graph_.find(name)) return name;
  for (int i = 1;; ++i) {
    std::string candidate = name + "_" + std::to_string(i);
    if (!graph_.find(candidate)) return candidate;
  }
}

Graph Rewriter::finish() {
  std::vector<NodeId> outputs;
  for (NodeId id : source_.outputs()) outputs.push_back(mapped(id));
  graph_.set_outputs(outputs);
  return std::move(graph_);
}

std::vector<int> count_consumers(const Graph& graph) {
  std::vector<int> count(graph.size(), 0);
  for (const Node& n : graph.nodes())
    for (NodeId in : n.inputs) ++count[in];
  for (NodeId out : graph.outputs()) ++count[out];
  return count;
}

}  // namespace tessera::graph
