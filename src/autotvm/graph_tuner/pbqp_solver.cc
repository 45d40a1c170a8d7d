#include "autotvm/graph_tuner/pbqp_solver.h"

#include <algorithm>
#include <limits>
#include <map>

namespace tessera::autotvm::graph_tuner {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct CostMatrix {
  int rows = 0, cols = 0;
  std::vector<double> values;  // row-major

  CostMatrix(int rows, int cols) : rows(rows), cols(cols), values(static_cast<size_t>(rows) * cols, 0.0) {}
  double& at(int row, int col) { return values[static_cast<size_t>(row) * cols + col]; }
  double at(int row, int col) const { return values[static_cast<size_t>(row) * cols + col]; }
  CostMatrix transposed() const {
    CostMatrix result(cols, rows);
    for (int row = 0; row < rows; ++row)
      for (int col = 0; col < cols; ++col) result.at(col, row) = at(row, col);
    return result;
  }
};

// The undirected PBQP graph. Each edge's matrix is held by both ends, oriented with the holder's
// states as rows, so a reduction reads it the same way whichever end it started from.
class PbqpGraph {
 public:
  explicit PbqpGraph(const LayoutProblem& problem) : costs_(problem.node_cost), neighbours_(costs_.size()) {
    for (const auto& edge : problem.edges) {
      CostMatrix matrix(num_states(edge.from), num_states(edge.to));
      for (int row = 0; row < matrix.rows; ++row)
        for (int col = 0; col < matrix.cols; ++col) matrix.at(row, col) = edge.cost[row][col];
      add_to_edge(edge.from, edge.to, matrix);
    }
  }

  int num_nodes() const { return static_cast<int>(costs_.size()); }
  int num_states(int node) const { return static_cast<int>(costs_[node].size()); }
  int degree(int node) const { return static_cast<int>(neighbours_[node].size()); }
  std::vector<double>& costs(int node) { return costs_[node]; }
  const std::map<int, CostMatrix>& neighbours(int node) const { return neighbours_[node]; }

  // Parallel edges arise when RII joins two nodes already adjacent; adding the matrices keeps
  // the sum of costs over any assignment unchanged.
  void add_to_edge(int a, int b, const CostMatrix& a_by_b) {
    add_into(neighbours_[a], b, a_by_b);
    add_into(neighbours_[b], a, a_by_b.transposed());
  }

  void remove_node(int node) {
    for (const auto& [neighbour, matrix] : neighbours_[node]) neighbours_[neighbour].erase(node);
    neighbours_[node].clear();
  }

 private:
  static void add_into(std::map<int, CostMatrix>& edges, int other, const CostMatrix& matrix) {
    auto [it, inserted] = edges.try_emplace(other, matrix);
    if (inserted) return;
    for (size_t i = 0; i < matrix.values.size(); ++i) it->second.values[i] += matrix.values[i];
  }

  std::vector<std::vector<double>> costs_;
  std::vector<std::map<int, CostMatrix>> neighbours_;
};

// How to choose a removed node's state once the nodes it was folded into are decided: `choice`
// is indexed by the neighbours' states (the first neighbour's state varies slowest). R0 and RN
// leave no neighbours, so their one entry is the state itself.
struct Reduction {
  int node;
  std::vector<int> neighbours;
  std::vector<int> choice;
};

int argmin(const std::vector<double>& values) {
  return static_cast<int>(std::min_element(values.begin(), values.end()) - values.begin());
}

Reduction reduce_degree_zero(PbqpGraph& graph, int node) { return {node, {}, {argmin(graph.costs(node))}}; }

// RI: the neighbour's every state absorbs the cheapest matching state of the removed node.
Reduction reduce_degree_one(PbqpGraph& graph, int node) {
  const auto& [neighbour, matrix] = *graph.neighbours(node).begin();
  const auto& node_costs = graph.costs(node);
  Reduction reduction{node, {neighbour}, std::vector<int>(graph.num_states(neighbour))};
  std::vector<double>& neighbour_costs = graph.costs(neighbour);
  for (int other_state = 0; other_state < graph.num_states(neighbour); ++other_state) {
    double best = kInfinity;
    for (int state = 0; state < graph.num_states(node); ++state) {
      const double cost = node_costs[state] + matrix.at(state, other_state);
      if (cost < best) {
        best = cost;
        reduction.choice[other_state] = state;
      }
    }
    neighbour_costs[other_state] += best;
  }
  graph.remove_node(node);
  return reduction;
}

// RII: the two neighbours get an edge pricing the cheapest state of the removed node for each
// pair of their states, which loses nothing.
Reduction reduce_degree_two(PbqpGraph& graph, int node) {
  auto it = graph.neighbours(node).begin();
  const auto& [first, to_first] = *it++;
  const auto& [second, to_second] = *it;
  const auto& node_costs = graph.costs(node);
  const int first_states = graph.num_states(first), second_states = graph.num_states(second);
  Reduction reduction{node, {first, second}, std::vector<int>(static_cast<size_t>(first_states) * second_states)};
  CostMatrix joined(first_states, second_states);
  for (int first_state = 0; first_state < first_states; ++first_state) {
    for (int second_state = 0; second_state < second_states; ++second_state) {
      double best = kInfinity;
      int& choice = reduction.choice[static_cast<size_t>(first_state) * second_states + second_state];
      for (int state = 0; state < graph.num_states(node); ++state) {
        const double cost = node_costs[state] + to_first.at(state, first_state) + to_second.at(state, second_state);
        if (cost < best) {
          best = cost;
          choice = state;
        }
      }
      joined.at(first_state, second_state) = best;
    }
  }
  const int first_node = first, second_node = second;  // the map entries die with the node
  graph.remove_node(node);
  graph.add_to_edge(first_node, second_node, joined);
  return reduction;
}

// RN, the one inexact step: fix the state that looks cheapest given each neighbour's best
// response, then charge the neighbours the edge costs that this state implies.
Reduction reduce_heuristically(PbqpGraph& graph, int node) {
  const auto& node_costs = graph.costs(node);
  std::vector<double> local_costs(node_costs);
  for (const auto& [neighbour, matrix] : graph.neighbours(node)) {
    const auto& neighbour_costs = graph.costs(neighbour);
    for (int state = 0; state < graph.num_states(node); ++state) {
      double best = kInfinity;
      for (int other_state = 0; other_state < graph.num_states(neighbour); ++other_state)
        best = std::min(best, neighbour_costs[other_state] + matrix.at(state, other_state));
      local_costs[state] += best;
    }
  }
  const int chosen = argmin(local_costs);
  for (const auto& [neighbour, matrix] : graph.neighbours(node)) {
    auto& neighbour_costs = graph.costs(neighbour);
    for (int other_state = 0; other_state < graph.num_states(neighbour); ++other_state)
      neighbour_costs[other_state] += matrix.at(chosen, other_state);
  }
  graph.remove_node(node);
  return {node, {}, {chosen}};
}

}  // namespace

std::vector<int> solve_pbqp(const LayoutProblem& problem) {
  validate(problem);
  PbqpGraph graph(problem);
  const int num_nodes = graph.num_nodes();

  // The exact reductions go first, lowest degree first; RN only runs when every remaining node has
  // degree three or more, on the node of highest degree, whose removal simplifies the graph most.
  std::vector<bool> removed(num_nodes, false);
  std::vector<Reduction> reductions;
  reductions.reserve(num_nodes);
  for (int remaining = num_nodes; remaining > 0; --remaining) {
    int lowest = -1, highest = -1;
    for (int node = 0; node < num_nodes; ++node) {
      if (removed[node]) continue;
      if (lowest < 0 || graph.degree(node) < graph.degree(lowest)) lowest = node;
      if (highest < 0 || graph.degree(node) > graph.degree(highest)) highest = node;
    }
    const int node = graph.degree(lowest) <= 2 ? lowest : highest;
    switch (graph.degree(node)) {
      case 0: reductions.push_back(reduce_degree_zero(graph, node)); break;
      case 1: reductions.push_back(reduce_degree_one(graph, node)); break;
      case 2: reductions.push_back(reduce_degree_two(graph, node)); break;
      default: reductions.push_back(reduce_heuristically(graph, node)); break;
    }
    removed[node] = true;
  }

  // A node's neighbours at removal were removed after it, so in reverse order they are decided.
  std::vector<int> states(num_nodes, -1);
  for (auto it = reductions.rbegin(); it != reductions.rend(); ++it) {
    size_t index = 0;
    for (int neighbour : it->neighbours) index = index * graph.num_states(neighbour) + states[neighbour];
    states[it->node] = it->choice[index];
  }
  return states;
}

}  // namespace tessera::autotvm::graph_tuner
