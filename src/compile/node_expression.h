#pragma once
// A graph node as a tensor expression: its operator's compute declaration
// (ops/operator.h) applied to the expressions of its inputs. Compile composes them
// into one compute DAG per fused kernel.
#include <vector>

#include "graph/graph.h"
#include "ir/tensor.h"

namespace tessera::build {

// `inputs`: one expression per node input (constants included, as
// placeholders). Throws tessera::Error naming the node when no kernel can be
// declared for it (e.g. a grouped, non-depthwise convolution).
ir::Tensor node_expression(const graph::Graph& graph, const graph::Node& node, const std::vector<ir::Tensor>& inputs);

// `t` stored as `stored`: t itself when it computes that type, else a copy
// cast to it (an operator that moves quantized values, a layout transform of
// uint8 data, computes them in int32; the graph stores them as they were).
ir::Tensor stored_as(const ir::Tensor& t, ir::DType stored);

// How a build stores a constant input of `node` (input `index`) for its
// kernel, when that differs from the graph's value: dense packs its weight
// (N, K) as (N/bn, K, bn). Returns the value unchanged otherwise.
runtime::NDArray kernel_constant(const graph::Graph& graph, const graph::Node& node, size_t index,
                                 const runtime::NDArray& value);
// The shape kernel_constant gives a constant of `shape`.
graph::Shape kernel_constant_shape(const graph::Graph& graph, const graph::Node& node, size_t index,
                                   const graph::Shape& shape);

}  // namespace tessera::build
