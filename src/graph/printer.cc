#include "graph/printer.h"

namespace tessera::graph {

std::string print_node(const Graph& graph, const Node& node) {
  std::string line = "%" + node.name + " = " + op_name(node.op);
  if (node.op != Op::kInput && node.op != Op::kConstant) {
    line += "(";
    for (size_t i = 0; i < node.inputs.size(); ++i) line += (i ? ", %" : "%") + graph.node(node.inputs[i]).name;
    line += ")";
  }
  const std::string attrs = node.attrs.to_string();
  if (!attrs.empty()) line += " " + attrs;
  return line + " -> " + node.type.to_string();
}

std::string print_graph(const Graph& graph, const PrintOptions& options) {
  const size_t inputs = graph.input_ids().size();
  size_t constants = 0;
  for (const Node& n : graph.nodes()) constants += n.op == Op::kConstant;
  auto count = [](size_t n, const std::string& noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); };
  std::string text = "graph: " + count(graph.size(), "node") + ", " + count(inputs, "input") + ", " +
                     count(constants, "constant") + " (" + std::to_string(count_parameters(graph)) + " parameters)\n";
  for (const Node& n : graph.nodes()) {
    if (n.op == Op::kConstant && !options.constants) continue;
    text += "  " + print_node(graph, n) + "\n";
  }
  text += "outputs:";
  for (NodeId id : graph.outputs()) text += " %" + graph.node(id).name;
  return text + "\n";
}

}  // namespace tessera::graph
