#pragma once
// Shape and type inference: the output type of each node from its inputs'
// types and its attributes (each operator's infer_shape, ops/operator.h), with every impossible combination an error that
// names the node and the shapes involved, e.g.
//   node 'layer1.0.conv1' (conv2d): weight [64, 32, 3, 3] expects 32 input
//   channels, data [1, 64, 56, 56] has 64
#include "graph/graph.h"

namespace tessera::graph {

// The output type of `node`, whose inputs' types in `graph` are already
// inferred. Inputs keep their declared type (checked); constants take their
// value's shape.
TensorType infer_type(const Graph& graph, const Node& node);

// Infers every node in order and stores the types; throws at the first
// impossible node. Also checks that the graph has outputs.
void infer_shapes(Graph& graph);

}  // namespace tessera::graph
