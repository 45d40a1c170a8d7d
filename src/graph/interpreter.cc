#include "graph/interpreter.h"

#include <cstring>
#include <memory>

#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::graph {

runtime::NDArray evaluate(const Graph&, const Node& node, const std::vector<const runtime::NDArray*>& args) {
  if (args.size() != node.inputs.size())
    throw Error(node.describe() + ": evaluated with " + std::to_string(args.size()) + " arguments, expects " +
                std::to_string(node.inputs.size()));
  const ops::Operator& op = node.op.definition();
  if (!op.reference) throw Error(node.describe() + ": has no computation to evaluate");
  ops::OperatorCall call{node.attrs, {}, node.type.shape, {}};
  std::vector<const float*> data;
  for (const runtime::NDArray* a : args) call.input_shapes.push_back(a->shape()), data.push_back(a->data());
  runtime::NDArray out(node.type.shape);
  op.reference(call, data, out.data());
  return out;
}

std::vector<runtime::NDArray> interpret(const Graph& graph, const std::vector<runtime::NDArray>& inputs) {
  return interpret(graph, inputs, nullptr);
}

std::vector<runtime::NDArray> interpret(const Graph& graph, const std::vector<runtime::NDArray>& inputs,
                                        const ValueObserver& observe) {
  const std::vector<NodeId> input_ids = graph.input_ids();
  if (inputs.size() != input_ids.size())
    throw Error("interpret: the graph has " + std::to_string(input_ids.size()) + " inputs, " +
                std::to_string(inputs.size()) + " given");
  // The last node reading each value: intermediates are freed after it, so a
  // deep network never holds all its activations at once.
  std::vector<NodeId> last_use(graph.size(), -1);
  for (const Node& n : graph.nodes())
    for (NodeId in : n.inputs) last_use[in] = n.id;
  for (NodeId out : graph.outputs()) last_use[out] = static_cast<NodeId>(graph.size());

  std::vector<std::shared_ptr<const runtime::NDArray>> values(graph.size());
  size_t next_input = 0;
  for (const Node& node : graph.nodes()) {
    if (node.op == Op::kInput) {
      const runtime::NDArray& given = inputs[next_input++];
      if (given.shape() != node.type.shape)
        throw Error("interpret: input " + support::quoted(node.name) + " expects shape " +
                    ops::shape_to_string(node.type.shape) + ", got " + ops::shape_to_string(given.shape()));
      values[node.id] = std::make_shared<runtime::NDArray>(runtime::copy_of(given));
    } else if (node.op == Op::kConstant) {
      values[node.id] = node.value;
    } else {
      std::vector<const runtime::NDArray*> args;
      for (NodeId in : node.inputs) args.push_back(values[in].get());
      values[node.id] = std::make_shared<runtime::NDArray>(evaluate(graph, node, args));
    }
    if (observe) observe(node, *values[node.id]);
    for (NodeId in : node.inputs)
      if (last_use[in] == node.id) values[in].reset();
  }
  std::vector<runtime::NDArray> outputs;
  for (NodeId id : graph.outputs()) outputs.push_back(runtime::copy_of(*values[id]));
  return outputs;
}

std::vector<runtime::NDArray> interpret(const Graph& graph, const std::map<std::string, runtime::NDArray>& inputs) {
  std::vector<runtime::NDArray> ordered;
  size_t used = 0;
  for (NodeId id : graph.input_ids()) {
    const std::string& name = graph.node(id).name;
    auto it = inputs.find(name);
    if (it == inputs.end()) throw Error("interpret: no value given for input " + support::quoted(name));
    ordered.push_back(runtime::copy_of(it->second));
    ++used;
  }
  if (used != inputs.size())
    for (const auto& [name, value] : inputs) {
      auto id = graph.find(name);
      if (!id || graph.node(*id).op != Op::kInput)
        throw Error("interpret: " + support::quoted(name) + " is not an input of the graph");
    }
  return interpret(graph, ordered);
}

}  // namespace tessera::graph
