#pragma once
// Helpers of the passes that recognise an operator written out as several
// (recognize_gelu, recognize_layer_norm): constants of one value, and
// products by them.
#include <optional>

#include "graph/graph.h"

namespace tessera::graph::pattern {

// Whether `id` is a constant of one element equal to `want` (within 1e-6,
// relative above 1: exporters round their constants to float).
bool is_scalar(const Graph& g, NodeId id, double want);
// The value of a constant of one element.
std::optional<float> scalar(const Graph& g, NodeId id);
// a when `id` is a * k or k * a with k a constant of one element equal to `want`.
std::optional<NodeId> times_scalar(const Graph& g, NodeId id, double want);

}  // namespace tessera::graph::pattern
