#pragma once
// Constants that hold one value per channel of an activation, in whatever
// shape broadcasting accepts ([C, 1, 1] against NCHW, [C] against NHWC,
// [1, C, 1, 1], ...): what batch_norm, biases and per-channel scales become.
#include <cstdint>
#include <optional>
#include <vector>

#include "graph/graph.h"

namespace tessera::graph {

// The per-channel values of `constant` against an activation of rank `rank`
// whose channels (extent `channels`) are axis `axis`; none when it is not a
// constant of that form.
std::optional<std::vector<float>> channel_values(const Node& constant, size_t rank, size_t axis, int64_t channels);

// Values shaped to broadcast along `axis` of a rank-`rank` activation:
// [C, 1, ..., 1] with rank - 1 - axis trailing ones.
runtime::NDArray channel_constant(const std::vector<float>& values, size_t rank, size_t axis);

}  // namespace tessera::graph
