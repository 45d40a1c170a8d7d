#pragma once
// The reference interpreter: evaluates a graph node by node with the plain-loop
// reference operators (ops/reference.h). Compiled networks are checked against
// it, so it favours being obviously right over being fast; it is fast enough
// for the zoo's models at batch 1 (ResNet-18 in seconds).
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtime/ndarray.h"

namespace tessera::graph {

// Inputs in the order of graph.input_ids(); returns the graph's outputs in
// order. Throws tessera::Error naming the input whose count or shape is wrong.
std::vector<runtime::NDArray> interpret(const Graph& graph, const std::vector<runtime::NDArray>& inputs);
// The same, showing `observe` every node's value as it is computed (what
// calibration records); the value is freed after its last reader.
using ValueObserver = std::function<void(const Node& node, const runtime::NDArray& value)>;
std::vector<runtime::NDArray> interpret(const Graph& graph, const std::vector<runtime::NDArray>& inputs,
                                        const ValueObserver& observe);
// Inputs by node name; every graph input must be given, and nothing else.
std::vector<runtime::NDArray> interpret(const Graph& graph, const std::map<std::string, runtime::NDArray>& inputs);

// One node's value from its arguments' values (in node.inputs order, shapes as
// in the graph): the single step the interpreter repeats, also what constant
// folding needs. Inputs and constants are not evaluated here.
runtime::NDArray evaluate(const Graph& graph, const Node& node, const std::vector<const runtime::NDArray*>& args);

}  // namespace tessera::graph
