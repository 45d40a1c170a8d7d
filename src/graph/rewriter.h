#pragma once
// Building a pass's output graph from its input: nodes are copied or replaced
// one by one in order, and every later reference to an old node goes to its
// replacement. New nodes get their type inferred at once (an error names the
// node) and a name made unique from the one asked for.
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tessera::graph {

class Rewriter {
 public:
  explicit Rewriter(const Graph& source) : source_(source), mapped_(source.size(), -1) {}

  // The node in the new graph standing for old node `id`.
  NodeId mapped(NodeId id) const;
  // `node` with its inputs mapped, appended; old `node.id` now maps to it.
  NodeId copy(const Node& node);
  // Old node `id` is replaced by new node `to`.
  void replace(NodeId id, NodeId to);
  // A new node whose inputs are already new ids.
  NodeId add(Op op, const std::string& name, std::vector<NodeId> inputs, Attrs attrs = NoAttrs{});
  NodeId add_constant(const std::string& name, runtime::NDArray value, DataType dtype = DataType::kFloat32);
  // A new graph input (named exactly `name`: no other node may have it).
  NodeId add_input(const std::string& name, TensorType type);
  const Node& node(NodeId new_id) const { return graph_.node(new_id); }

  // The new graph, with the old outputs mapped.
  Graph finish();

 private:
  std::string unique_name(const std::string& name) const;

  const Graph& source_;
  Graph graph_;
  std::vector<NodeId> mapped_;
};

// How many nodes read each node, and the graph's outputs count as readers.
std::vector<int> count_consumers(const Graph& graph);

}  // namespace tessera::graph
