#include "graph/pattern.h"

#include <algorithm>
#include <cmath>

namespace tessera::graph::pattern {

std::optional<float> scalar(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (n.op != Op::kConstant || !n.value || n.value->size() != 1) return std::nullopt;
  return (*n.value)[0];
}

bool is_scalar(const Graph& g, NodeId id, double want) {
  const std::optional<float> v = scalar(g, id);
  return v && std::fabs(*v - want) <= 1e-6 * std::max(1.0, std::fabs(want));
}

std::optional<NodeId> times_scalar(const Graph& g, NodeId id, double want) {
  const Node& n = g.node(id);
  if (n.op != Op::kMultiply) return std::nullopt;
  for (int i = 0; i < 2; ++i)
    if (is_scalar(g, n.inputs[1 - i], want)) return n.inputs[i];
  return std::nullopt;
}

}  // namespace tessera::graph::pattern
