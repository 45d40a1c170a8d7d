#pragma once
// A readable listing of a graph, one node per line, for `tessera show` and
// failure messages:
//   %layer1.0.conv1 = conv2d(%maxpool, %layer1.0.conv1.weight) strides=[1, 1] ... -> float32[1, 64, 56, 56]
#include <string>

#include "graph/graph.h"

namespace tessera::graph {

struct PrintOptions {
  bool constants = true;  // list constant nodes (weights) too
};

std::string print_graph(const Graph& graph, const PrintOptions& options = {});
// One node's line, without the trailing newline.
std::string print_node(const Graph& graph, const Node& node);

}  // namespace tessera::graph
