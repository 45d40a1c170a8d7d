#include "autotvm/graph_tuner/dp_solver.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace tessera::autotvm::graph_tuner {
namespace {

// What reconstruction needs of one processed node v: the nodes whose states indexed the table
// built for v (the live nodes before v, then v), which of them stayed live, and for each entry of
// the table kept afterwards, the index of the cheapest entry of v's table that it summarises.
struct DpStep {
  std::vector<int> table_nodes;
  std::vector<bool> stays_live;
  std::vector<int64_t> argmin;
};

int num_states(const LayoutProblem& problem, int node) { return static_cast<int>(problem.node_cost[node].size()); }

// Mixed-radix strides of a table over `nodes` (the first node varies fastest), with 0 for nodes
// left out by `keep`, so that summing digit * stride maps an entry onto the smaller table.
std::vector<int64_t> strides_of_kept(const LayoutProblem& problem, const std::vector<int>& nodes,
                                     const std::vector<bool>& keep) {
  std::vector<int64_t> strides(nodes.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!keep[i]) continue;
    strides[i] = stride;
    stride *= num_states(problem, nodes[i]);
  }
  return strides;
}

}  // namespace

std::optional<std::vector<int>> solve_dp(const LayoutProblem& problem, const DpOptions& options) {
  validate(problem);
  const int num_nodes = static_cast<int>(problem.node_cost.size());

  // A node leaves the live set once its last consumer is processed; one without consumers leaves
  // as soon as it is processed itself.
  std::vector<int> last_consumer(num_nodes);
  std::iota(last_consumer.begin(), last_consumer.end(), 0);
  std::vector<std::vector<const LayoutProblem::Edge*>> in_edges(num_nodes);
  for (const auto& edge : problem.edges) {
    last_consumer[edge.from] = std::max(last_consumer[edge.from], edge.to);
    in_edges[edge.to].push_back(&edge);
  }

  std::vector<int> live;                 // digit order of `frontier`, first varies fastest
  std::vector<double> frontier = {0.0};  // cheapest cost of nodes processed so far, per live states
  std::vector<DpStep> steps;
  steps.reserve(num_nodes);

  for (int node = 0; node < num_nodes; ++node) {
    const int node_states = num_states(problem, node);
    const int64_t frontier_size = static_cast<int64_t>(frontier.size());
    if (frontier_size > options.max_states / node_states) return std::nullopt;

    DpStep step;
    step.table_nodes = live;
    step.table_nodes.push_back(node);
    for (int table_node : step.table_nodes) step.stays_live.push_back(last_consumer[table_node] != node);
    const std::vector<int64_t> kept_strides = strides_of_kept(problem, step.table_nodes, step.stays_live);
    int64_t kept_size = 1;
    std::vector<int> next_live;
    for (size_t i = 0; i < step.table_nodes.size(); ++i) {
      if (!step.stays_live[i]) continue;
      next_live.push_back(step.table_nodes[i]);
      kept_size *= num_states(problem, step.table_nodes[i]);
    }

    // Every producer of `node` still has `node` as an unprocessed consumer, so it is live.
    struct Input {
      size_t digit;
      const std::vector<std::vector<double>>* cost;
    };
    std::vector<Input> inputs;
    for (const auto* edge : in_edges[node]) {
      const auto position = std::find(live.begin(), live.end(), edge->from) - live.begin();
      inputs.push_back({static_cast<size_t>(position), &edge->cost});
    }

    std::vector<double> next_frontier(kept_size, std::numeric_limits<double>::infinity());
    step.argmin.assign(kept_size, -1);
    const int64_t node_stride = kept_strides.back();
    const auto& node_costs = problem.node_cost[node];
    std::vector<int> digits(live.size(), 0);
    for (int64_t entry = 0; entry < frontier_size; ++entry) {
      int64_t kept_base = 0;
      for (size_t i = 0; i < live.size(); ++i) kept_base += digits[i] * kept_strides[i];
      for (int state = 0; state < node_states; ++state) {
        double cost = frontier[entry] + node_costs[state];
        for (const Input& input : inputs) cost += (*input.cost)[digits[input.digit]][state];
        const int64_t kept_entry = kept_base + state * node_stride;
        if (cost < next_frontier[kept_entry]) {
          next_frontier[kept_entry] = cost;
          step.argmin[kept_entry] = entry + state * frontier_size;
        }
      }
      for (size_t i = 0; i < live.size() && ++digits[i] == num_states(problem, live[i]); ++i) digits[i] = 0;
    }

    steps.push_back(std::move(step));
    live = std::move(next_live);
    frontier = std::move(next_frontier);
  }

  // Walking back, every node still live after step v was dropped at a later step, so its state
  // is already known and locates the entry whose argmin fixes the nodes dropped at v.
  std::vector<int> states(num_nodes, -1);
  for (int node = num_nodes - 1; node >= 0; --node) {
    const DpStep& step = steps[node];
    const std::vector<int64_t> kept_strides = strides_of_kept(problem, step.table_nodes, step.stays_live);
    int64_t kept_entry = 0;
    for (size_t i = 0; i < step.table_nodes.size(); ++i)
      if (step.stays_live[i]) kept_entry += states[step.table_nodes[i]] * kept_strides[i];
    int64_t table_entry = step.argmin[kept_entry];
    for (size_t i = 0; i < step.table_nodes.size(); ++i) {
      const int radix = num_states(problem, step.table_nodes[i]);
      if (!step.stays_live[i]) states[step.table_nodes[i]] = static_cast<int>(table_entry % radix);
      table_entry /= radix;
    }
  }
  return states;
}

}  // namespace tessera::autotvm::graph_tuner
