#pragma once
// Layout selection by PBQP reductions (Scholz and Eckstein; the graph tuner's PBQP, as in TVM's
// PBQPTuner): nodes are removed one at a time, their costs folded into their neighbours. It is
// the fallback for graphs too densely connected for the exact DP: its cost stays polynomial,
// and it is still exact when no node of degree three or more has to be removed heuristically
// (trees, series-parallel graphs such as residual networks).
#include <vector>

#include "autotvm/graph_tuner/layout_problem.h"

namespace tessera::autotvm::graph_tuner {

// One state per node; optimal on graphs of treewidth at most two, a heuristic choice otherwise.
// Throws tessera::Error when the problem is invalid.
std::vector<int> solve_pbqp(const LayoutProblem& problem);

}  // namespace tessera::autotvm::graph_tuner
