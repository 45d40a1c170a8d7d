#include "autotvm/graph_tuner/layout_problem.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "tessera/error.h"

namespace tessera::autotvm::graph_tuner {
namespace {

constexpr int64_t kBruteForceLimit = 10'000'000;

std::string edge_name(size_t index, const LayoutProblem::Edge& edge) {
  std::ostringstream name;
  name << "edge " << edge.from << "->" << edge.to << " (edges[" << index << "])";
  return name.str();
}

// Infinity is rejected with NaN: a cost is a measured time, and an infinite one would make
// totals incomparable and the solvers' sums meaningless.
void check_cost(double cost, const std::string& where) {
  if (std::isfinite(cost) && cost >= 0) return;
  std::ostringstream message;
  message << "layout problem: " << where << " is " << cost << "; costs must be finite and non-negative seconds";
  throw Error(message.str());
}

}  // namespace

void validate(const LayoutProblem& problem) {
  const int num_nodes = static_cast<int>(problem.node_cost.size());
  for (int node = 0; node < num_nodes; ++node) {
    const auto& costs = problem.node_cost[node];
    if (costs.empty()) throw Error("layout problem: node " + std::to_string(node) + " has no candidate states");
    for (size_t state = 0; state < costs.size(); ++state)
      check_cost(costs[state], "node " + std::to_string(node) + " state " + std::to_string(state) + " cost");
  }

  std::set<std::pair<int, int>> seen;
  for (size_t index = 0; index < problem.edges.size(); ++index) {
    const auto& edge = problem.edges[index];
    const std::string name = edge_name(index, edge);
    if (edge.from < 0 || edge.to < 0 || edge.from >= num_nodes || edge.to >= num_nodes)
      throw Error("layout problem: " + name + " names a node outside 0.." + std::to_string(num_nodes - 1));
    if (edge.from >= edge.to)
      throw Error("layout problem: " + name +
                  " must go from a lower to a higher node id (node ids are a topological order)");
    if (!seen.emplace(edge.from, edge.to).second)
      throw Error("layout problem: " + name + " is a duplicate edge; merge parallel edges into one matrix");

    const size_t from_states = problem.node_cost[edge.from].size();
    const size_t to_states = problem.node_cost[edge.to].size();
    if (edge.cost.size() != from_states)
      throw Error("layout problem: " + name + " cost matrix has " + std::to_string(edge.cost.size()) +
                  " rows but node " + std::to_string(edge.from) + " has " + std::to_string(from_states) + " states");
    for (size_t row = 0; row < from_states; ++row) {
      if (edge.cost[row].size() != to_states)
        throw Error("layout problem: " + name + " cost matrix row " + std::to_string(row) + " has " +
                    std::to_string(edge.cost[row].size()) + " columns but node " + std::to_string(edge.to) + " has " +
                    std::to_string(to_states) + " states");
      for (size_t col = 0; col < to_states; ++col)
        check_cost(edge.cost[row][col], name + " cost[" + std::to_string(row) + "][" + std::to_string(col) + "]");
    }
  }
}

double total_cost(const LayoutProblem& problem, const std::vector<int>& states) {
  validate(problem);
  if (states.size() != problem.node_cost.size())
    throw Error("layout problem: assignment has " + std::to_string(states.size()) + " states for " +
                std::to_string(problem.node_cost.size()) + " nodes");
  double total = 0;
  for (size_t node = 0; node < states.size(); ++node) {
    const int state = states[node];
    if (state < 0 || state >= static_cast<int>(problem.node_cost[node].size()))
      throw Error("layout problem: assignment picks state " + std::to_string(state) + " for node " +
                  std::to_string(node) + ", which has " + std::to_string(problem.node_cost[node].size()) + " states");
    total += problem.node_cost[node][state];
  }
  for (const auto& edge : problem.edges) total += edge.cost[states[edge.from]][states[edge.to]];
  return total;
}

std::vector<int> brute_force(const LayoutProblem& problem) {
  validate(problem);
  const int num_nodes = static_cast<int>(problem.node_cost.size());
  int64_t assignments = 1;
  for (const auto& costs : problem.node_cost) {
    assignments *= static_cast<int64_t>(costs.size());
    if (assignments > kBruteForceLimit)
      throw Error("layout problem: brute force refuses more than " + std::to_string(kBruteForceLimit) + " assignments");
  }

  // Edges go to higher ids, so once nodes 0..v are fixed every edge into v can be priced.
  std::vector<std::vector<const LayoutProblem::Edge*>> in_edges(num_nodes);
  for (const auto& edge : problem.edges) in_edges[edge.to].push_back(&edge);

  std::vector<int> states(num_nodes, 0);
  std::vector<int> best_states = states;
  double best_cost = std::numeric_limits<double>::infinity();
  auto search = [&](auto&& self, int node, double cost_so_far) -> void {
    // Costs are non-negative, so a prefix already as dear as the best cannot lead to a better one.
    if (cost_so_far >= best_cost) return;
    if (node == num_nodes) {
      best_cost = cost_so_far;
      best_states = states;
      return;
    }
    for (int state = 0; state < static_cast<int>(problem.node_cost[node].size()); ++state) {
      states[node] = state;
      double cost = cost_so_far + problem.node_cost[node][state];
      for (const auto* edge : in_edges[node]) cost += edge->cost[states[edge->from]][state];
      self(self, node + 1, cost);
    }
  };
  search(search, 0, 0.0);
  return best_states;
}

}  // namespace tessera::autotvm::graph_tuner
