#pragma once
// Shape and type inference: the output type of each node from its inputs'
// types and its attributes, with every impossible combination an error that
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

// Output extent of a pooling window along one axis, PyTorch's rule: floor (or
// ceil with ceil_mode) of (in + pads - kernel) / stride, plus one, where in
// ceil mode the last window must start inside the input or leading padding.
int64_t pool_output_extent(int64_t in, int64_t pad_before, int64_t pad_after, int64_t kernel, int64_t stride,
                           bool ceil_mode);

}  // namespace tessera::graph
