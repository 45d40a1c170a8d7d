#pragma once
// Exact layout selection by dynamic programming over the nodes in topological order (the graph
// tuner's DP, as in TVM's DPTuner). Its cost grows with the product of the state counts of the
// nodes that are live at once, small for chains and residual networks, so a limit lets callers
// fall back to the PBQP heuristic on graphs where exactness is too dear.
#include <cstdint>
#include <optional>
#include <vector>

#include "autotvm/graph_tuner/layout_problem.h"

namespace tessera::autotvm::graph_tuner {

struct DpOptions {
  // Largest table the DP may build: when node v is processed, the table spans the states of the
  // live nodes (those still feeding an unprocessed node) together with v's own states.
  int64_t max_states = 1 << 20;
};

// An optimal assignment (one state per node), or std::nullopt when some table would exceed
// options.max_states. Throws tessera::Error when the problem is invalid.
std::optional<std::vector<int>> solve_dp(const LayoutProblem& problem, const DpOptions& options = {});

}  // namespace tessera::autotvm::graph_tuner
