#pragma once
// The graph tuner's layout-selection problem: pick one state (a schedule and the data layout it
// implies) per tunable node of a DAG so that node run times plus the layout transforms needed on
// edges are cheapest overall. Picking each node's fastest schedule alone ignores those transforms,
// which is why the DP and PBQP solvers work on this whole-graph form.
#include <vector>

namespace tessera::autotvm::graph_tuner {

struct LayoutProblem {
  // node_cost[i][s]: seconds node i takes in state s. Node ids are a topological order.
  std::vector<std::vector<double>> node_cost;

  struct Edge {
    int from, to;
    // cost[s_from][s_to]: seconds of the transform between from's output layout under s_from and
    // to's input layout under s_to; 0 where the layouts agree.
    std::vector<std::vector<double>> cost;
  };
  std::vector<Edge> edges;
};

// Throws tessera::Error naming the offending node or edge: a node without states, an edge matrix
// of the wrong shape, an edge not from a lower to a higher id (or naming an unknown node), a
// duplicate edge, a cost that is negative, NaN or infinite.
void validate(const LayoutProblem& problem);

// Sum of the chosen states' node costs and of the edge costs between them. Throws tessera::Error
// when the problem is invalid or `states` does not pick one existing state per node.
double total_cost(const LayoutProblem& problem, const std::vector<int>& states);

// The optimum by exhaustive search: an oracle for tests of the real solvers. Throws tessera::Error
// when there are more than 1e7 assignments to try.
std::vector<int> brute_force(const LayoutProblem& problem);

}  // namespace tessera::autotvm::graph_tuner
