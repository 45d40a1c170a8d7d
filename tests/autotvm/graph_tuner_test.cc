// The graph tuner's solvers against an exhaustive oracle on random layout problems: the DP must
// always find the optimum, PBQP must on graphs its exact reductions cover (chains, trees,
// series-parallel and residual graphs) and on denser graphs at least return a valid assignment.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "autotvm/graph_tuner/dp_solver.h"
#include "autotvm/graph_tuner/layout_problem.h"
#include "autotvm/graph_tuner/pbqp_solver.h"
#include "tessera/error.h"

namespace tessera::autotvm::graph_tuner {
namespace {

using EdgeList = std::vector<std::pair<int, int>>;

// Costs in the range of real kernels (milliseconds). Half the edges price transforms the way real
// ones do, zero where the two states share a layout, so that ties are exercised as well.
LayoutProblem random_problem(int num_nodes, const EdgeList& edges, int max_states, std::mt19937& rng) {
  std::uniform_int_distribution<int> states_per_node(1, max_states);
  std::uniform_real_distribution<double> node_seconds(1e-4, 5e-3);
  std::uniform_real_distribution<double> transform_seconds(1e-5, 2e-3);
  std::uniform_int_distribution<int> layout(0, 2);
  std::bernoulli_distribution layout_structured(0.5);

  LayoutProblem problem;
  std::vector<std::vector<int>> layouts(num_nodes);
  for (int node = 0; node < num_nodes; ++node) {
    const int states = states_per_node(rng);
    std::vector<double> costs(states);
    for (double& cost : costs) cost = node_seconds(rng);
    problem.node_cost.push_back(costs);
    for (int state = 0; state < states; ++state) layouts[node].push_back(layout(rng));
  }
  for (auto [from, to] : edges) {
    const bool structured = layout_structured(rng);
    LayoutProblem::Edge edge{from, to, {}};
    for (size_t row = 0; row < problem.node_cost[from].size(); ++row) {
      edge.cost.emplace_back();
      for (size_t col = 0; col < problem.node_cost[to].size(); ++col) {
        const bool same_layout = layouts[from][row] == layouts[to][col];
        edge.cost.back().push_back(structured && same_layout ? 0.0 : transform_seconds(rng));
      }
    }
    problem.edges.push_back(std::move(edge));
  }
  return problem;
}

// Sized like real tuning (many schedules per node); transforms are free between states whose
// index agrees modulo four, standing in for four data layouts.
LayoutProblem problem_with_uniform_states(int num_nodes, const EdgeList& edges, int states, std::mt19937& rng) {
  std::uniform_real_distribution<double> seconds(1e-4, 5e-3);
  LayoutProblem problem;
  problem.node_cost.assign(num_nodes, std::vector<double>(states));
  for (auto& costs : problem.node_cost)
    for (double& cost : costs) cost = seconds(rng);
  for (auto [from, to] : edges) {
    LayoutProblem::Edge edge{from, to, std::vector<std::vector<double>>(states, std::vector<double>(states))};
    for (int row = 0; row < states; ++row)
      for (int col = 0; col < states; ++col) edge.cost[row][col] = row % 4 == col % 4 ? 0.0 : seconds(rng);
    problem.edges.push_back(std::move(edge));
  }
  return problem;
}

EdgeList chain_edges(int num_nodes) {
  EdgeList edges;
  for (int node = 0; node + 1 < num_nodes; ++node) edges.emplace_back(node, node + 1);
  return edges;
}

// Half the trees fan out (each node reads one earlier node), half fan in (each feeds one later
// node), so both nodes with many consumers and nodes with many inputs appear.
EdgeList tree_edges(int num_nodes, std::mt19937& rng) {
  EdgeList edges;
  const bool fan_out = std::bernoulli_distribution(0.5)(rng);
  for (int node = 1; node < num_nodes; ++node) {
    const int other = std::uniform_int_distribution<int>(0, node - 1)(rng);
    if (fan_out)
      edges.emplace_back(other, node);
    else
      edges.emplace_back(num_nodes - 1 - node, num_nodes - 1 - other);
  }
  return edges;
}

// A chain with a skip edge i -> i+2 from every other node: the shape of residual blocks, where
// the add joining the branch and the shortcut feeds the next convolution.
EdgeList resnet_like_edges(int num_nodes) {
  EdgeList edges = chain_edges(num_nodes);
  for (int node = 0; node + 2 < num_nodes; node += 2) edges.emplace_back(node, node + 2);
  return edges;
}

// Random two-terminal series-parallel graph grown from one edge by subdividing an edge or adding
// a two-edge path beside it, then renumbered in topological order. Diamonds are the smallest.
EdgeList series_parallel_edges(int num_nodes, std::mt19937& rng) {
  EdgeList edges = {{0, 1}};
  for (int next = 2; next < num_nodes; ++next) {
    const size_t picked = std::uniform_int_distribution<size_t>(0, edges.size() - 1)(rng);
    const auto [from, to] = edges[picked];
    if (std::bernoulli_distribution(0.5)(rng)) edges.erase(edges.begin() + picked);
    edges.emplace_back(from, next);
    edges.emplace_back(next, to);
  }
  std::vector<int> in_degree(num_nodes, 0);
  for (auto [from, to] : edges) ++in_degree[to];
  std::vector<int> order, new_id(num_nodes);
  std::vector<int> ready = {0};
  while (!ready.empty()) {
    const int node = ready.back();
    ready.pop_back();
    new_id[node] = static_cast<int>(order.size());
    order.push_back(node);
    for (auto [from, to] : edges)
      if (from == node && --in_degree[to] == 0) ready.push_back(to);
  }
  for (auto& [from, to] : edges) from = new_id[from], to = new_id[to];
  return edges;
}

EdgeList dense_dag_edges(int num_nodes, double density, std::mt19937& rng) {
  EdgeList edges;
  std::bernoulli_distribution present(density);
  for (int from = 0; from < num_nodes; ++from)
    for (int to = from + 1; to < num_nodes; ++to)
      if (present(rng)) edges.emplace_back(from, to);
  return edges;
}

void expect_same_cost(double actual, double expected, const std::string& context) {
  EXPECT_LE(std::abs(actual - expected), 1e-9 * std::abs(expected))
      << context << ": got " << actual << ", optimum " << expected;
}

void expect_dp_optimal(const LayoutProblem& problem, const std::string& context) {
  const double optimum = total_cost(problem, brute_force(problem));
  const auto states = solve_dp(problem);
  ASSERT_TRUE(states.has_value()) << context;
  expect_same_cost(total_cost(problem, *states), optimum, context);
}

void expect_pbqp_optimal(const LayoutProblem& problem, const std::string& context) {
  const double optimum = total_cost(problem, brute_force(problem));
  expect_same_cost(total_cost(problem, solve_pbqp(problem)), optimum, context);
}

const auto kChain = [](int num_nodes, std::mt19937&) { return chain_edges(num_nodes); };
const auto kTree = [](int num_nodes, std::mt19937& rng) { return tree_edges(num_nodes, rng); };
const auto kResNetLike = [](int num_nodes, std::mt19937&) { return resnet_like_edges(num_nodes); };
const auto kSeriesParallel = [](int num_nodes, std::mt19937& rng) {
  return series_parallel_edges(std::max(num_nodes, 2), rng);
};
const auto kDenseDag = [](int num_nodes, std::mt19937& rng) { return dense_dag_edges(num_nodes, 0.7, rng); };

// Problems get at least the requested number of nodes, more if the generator made more (the
// series-parallel one needs two).
template <typename EdgesOf>
void for_random_problems(uint32_t seed, int trials, int max_nodes, int max_states, EdgesOf edges_of,
                         void (*check)(const LayoutProblem&, const std::string&)) {
  std::mt19937 rng(seed);
  for (int trial = 0; trial < trials; ++trial) {
    const int requested_nodes = std::uniform_int_distribution<int>(1, max_nodes)(rng);
    const EdgeList edges = edges_of(requested_nodes, rng);
    int num_nodes = requested_nodes;
    for (auto [from, to] : edges) num_nodes = std::max(num_nodes, to + 1);
    check(random_problem(num_nodes, edges, max_states, rng),
          "trial " + std::to_string(trial) + " with " + std::to_string(num_nodes) + " nodes");
  }
}

LayoutProblem diamond(std::mt19937& rng) { return random_problem(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}}, 4, rng); }

// A small valid problem for the validation tests to break one way at a time.
LayoutProblem two_nodes_one_edge() {
  LayoutProblem problem;
  problem.node_cost = {{1.0, 2.0}, {3.0, 4.0, 5.0}};
  problem.edges.push_back({0, 1, {{0.0, 0.5, 0.5}, {0.5, 0.0, 0.5}}});
  return problem;
}

void expect_rejected(const LayoutProblem& problem, const std::vector<std::string>& message_parts) {
  try {
    validate(problem);
    ADD_FAILURE() << "validate accepted the problem; expected a message with \"" << message_parts.front() << "\"";
  } catch (const Error& error) {
    const std::string message = error.what();
    for (const auto& part : message_parts)
      EXPECT_NE(message.find(part), std::string::npos) << "message \"" << message << "\" lacks \"" << part << "\"";
  }
}

// ---- the problem and its oracle ----

TEST(GraphTunerProblem, TotalCostSumsNodeCostsAndEdgeCostsOfChosenStates) {
  const LayoutProblem problem = two_nodes_one_edge();
  EXPECT_DOUBLE_EQ(total_cost(problem, {0, 0}), 1.0 + 3.0 + 0.0);
  EXPECT_DOUBLE_EQ(total_cost(problem, {1, 2}), 2.0 + 5.0 + 0.5);
}

TEST(GraphTunerProblem, TotalCostRejectsAssignmentOfWrongLengthOrUnknownState) {
  const LayoutProblem problem = two_nodes_one_edge();
  EXPECT_THROW(total_cost(problem, {0}), Error);
  EXPECT_THROW(total_cost(problem, {0, 3}), Error);
  EXPECT_THROW(total_cost(problem, {-1, 0}), Error);
}

TEST(GraphTunerProblem, BruteForceFindsOptimumThatTradesNodeCostForNoTransform) {
  // Node 1's state 1 is slower alone but saves the transform from node 0's only state.
  LayoutProblem problem;
  problem.node_cost = {{1.0}, {1.0, 1.5}};
  problem.edges.push_back({0, 1, {{1.0, 0.0}}});
  EXPECT_EQ(brute_force(problem), (std::vector<int>{0, 1}));
}

TEST(GraphTunerProblem, BruteForceRefusesMoreThanTenMillionAssignments) {
  LayoutProblem problem;
  problem.node_cost.assign(24, {1.0, 2.0});  // 2^24 assignments
  EXPECT_THROW(brute_force(problem), Error);
}

TEST(GraphTunerProblem, ValidateAcceptsWellFormedProblemAndEmptyOne) {
  EXPECT_NO_THROW(validate(two_nodes_one_edge()));
  EXPECT_NO_THROW(validate(LayoutProblem{}));
}

TEST(GraphTunerProblem, ValidateRejectsNodeWithoutStates) {
  LayoutProblem problem = two_nodes_one_edge();
  problem.node_cost.push_back({});
  expect_rejected(problem, {"node 2", "no candidate states"});
}

TEST(GraphTunerProblem, ValidateRejectsNegativeNanOrInfiniteNodeCost) {
  for (double bad : {-1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    LayoutProblem problem = two_nodes_one_edge();
    problem.node_cost[1][2] = bad;
    expect_rejected(problem, {"node 1 state 2", "non-negative"});
  }
}

TEST(GraphTunerProblem, ValidateRejectsNegativeOrNanEdgeCost) {
  for (double bad : {-0.25, std::numeric_limits<double>::quiet_NaN()}) {
    LayoutProblem problem = two_nodes_one_edge();
    problem.edges[0].cost[1][0] = bad;
    expect_rejected(problem, {"edge 0->1", "cost[1][0]"});
  }
}

TEST(GraphTunerProblem, ValidateRejectsEdgeMatrixWithWrongRowCount) {
  LayoutProblem problem = two_nodes_one_edge();
  problem.edges[0].cost.pop_back();
  expect_rejected(problem, {"edge 0->1", "1 rows", "node 0 has 2 states"});
}

TEST(GraphTunerProblem, ValidateRejectsEdgeMatrixWithWrongColumnCount) {
  LayoutProblem problem = two_nodes_one_edge();
  problem.edges[0].cost[1].push_back(0.0);
  expect_rejected(problem, {"edge 0->1", "row 1 has 4 columns", "node 1 has 3 states"});
}

TEST(GraphTunerProblem, ValidateRejectsEdgeNotFromLowerToHigherId) {
  LayoutProblem backwards = two_nodes_one_edge();
  backwards.edges[0] = {1, 0, {{0, 0}, {0, 0}, {0, 0}}};
  expect_rejected(backwards, {"edge 1->0", "lower to a higher"});

  LayoutProblem self_loop = two_nodes_one_edge();
  self_loop.edges.push_back({1, 1, {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}});
  expect_rejected(self_loop, {"edge 1->1", "lower to a higher"});
}

TEST(GraphTunerProblem, ValidateRejectsEdgeToUnknownNode) {
  LayoutProblem problem = two_nodes_one_edge();
  problem.edges.push_back({0, 2, {{0}, {0}}});
  expect_rejected(problem, {"edge 0->2", "outside 0..1"});
}

TEST(GraphTunerProblem, ValidateRejectsDuplicateEdge) {
  LayoutProblem problem = two_nodes_one_edge();
  problem.edges.push_back(problem.edges[0]);
  expect_rejected(problem, {"edge 0->1 (edges[1])", "duplicate"});
}

TEST(GraphTunerProblem, SolversRejectInvalidProblems) {
  LayoutProblem problem = two_nodes_one_edge();
  problem.node_cost[0][0] = -1.0;
  EXPECT_THROW(solve_dp(problem), Error);
  EXPECT_THROW(solve_pbqp(problem), Error);
}

// ---- DP: exact everywhere ----

TEST(GraphTunerDp, EmptyProblemGetsEmptyAssignment) {
  const auto states = solve_dp(LayoutProblem{});
  ASSERT_TRUE(states.has_value());
  EXPECT_TRUE(states->empty());
}

TEST(GraphTunerDp, MatchesBruteForceOnRandomChains) { for_random_problems(1, 60, 9, 4, kChain, expect_dp_optimal); }

TEST(GraphTunerDp, MatchesBruteForceOnRandomTrees) { for_random_problems(2, 60, 9, 4, kTree, expect_dp_optimal); }

TEST(GraphTunerDp, MatchesBruteForceOnRandomResNetLikeGraphs) {
  for_random_problems(3, 60, 9, 4, kResNetLike, expect_dp_optimal);
}

TEST(GraphTunerDp, MatchesBruteForceOnDiamondsAndSeriesParallelGraphs) {
  std::mt19937 rng(4);
  for (int trial = 0; trial < 20; ++trial) expect_dp_optimal(diamond(rng), "diamond " + std::to_string(trial));
  for_random_problems(5, 60, 9, 4, kSeriesParallel, expect_dp_optimal);
}

TEST(GraphTunerDp, MatchesBruteForceOnSmallDenseDags) {
  for_random_problems(6, 60, 8, 4, kDenseDag, expect_dp_optimal);
}

TEST(GraphTunerDp, MatchesBruteForceWithUnconnectedNodes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial)
    expect_dp_optimal(random_problem(7, {{0, 3}, {3, 6}, {1, 6}}, 4, rng), "trial " + std::to_string(trial));
}

TEST(GraphTunerDp, ReturnsNulloptWhenMaxStatesIsTiny) {
  std::mt19937 rng(8);
  const LayoutProblem problem = problem_with_uniform_states(5, chain_edges(5), 4, rng);
  EXPECT_FALSE(solve_dp(problem, {.max_states = 1}).has_value());
  EXPECT_FALSE(solve_dp(problem, {.max_states = 3}).has_value());
}

TEST(GraphTunerDp, MaxStatesBoundsLiveNodesTimesProcessedNodeStates) {
  // On a chain one node is live while the next is processed: 4 * 4 table entries.
  std::mt19937 rng(9);
  const LayoutProblem problem = problem_with_uniform_states(5, chain_edges(5), 4, rng);
  EXPECT_FALSE(solve_dp(problem, {.max_states = 15}).has_value());
  const auto states = solve_dp(problem, {.max_states = 16});
  ASSERT_TRUE(states.has_value());
  expect_same_cost(total_cost(problem, *states), total_cost(problem, brute_force(problem)), "chain");
}

TEST(GraphTunerDp, ReturnsNulloptOnDenseDagWhenFrontierOutgrowsLimit) {
  // In a complete DAG every earlier node stays live until the last one.
  std::mt19937 rng(10);
  const LayoutProblem problem = problem_with_uniform_states(10, dense_dag_edges(10, 1.0, rng), 4, rng);
  EXPECT_FALSE(solve_dp(problem, {.max_states = 1 << 12}).has_value());
  EXPECT_TRUE(solve_dp(problem, {.max_states = 1 << 20}).has_value());
}

TEST(GraphTunerDp, SolvesTwentyNodeResNetLikeGraphWithSixteenStates) {
  std::mt19937 rng(11);
  const LayoutProblem problem = problem_with_uniform_states(20, resnet_like_edges(20), 16, rng);
  const auto states = solve_dp(problem);  // the frontier stays two live nodes wide: within the default limit
  ASSERT_TRUE(states.has_value());
  // Too many assignments for brute force; PBQP is exact on this shape, so it is the witness.
  expect_same_cost(total_cost(problem, *states), total_cost(problem, solve_pbqp(problem)), "resnet-like");
}

// ---- PBQP: exact on treewidth two, a valid heuristic beyond ----

TEST(GraphTunerPbqp, EmptyProblemGetsEmptyAssignment) { EXPECT_TRUE(solve_pbqp(LayoutProblem{}).empty()); }

TEST(GraphTunerPbqp, MatchesBruteForceOnRandomChains) {
  for_random_problems(21, 60, 9, 4, kChain, expect_pbqp_optimal);
}

TEST(GraphTunerPbqp, MatchesBruteForceOnRandomTrees) { for_random_problems(22, 60, 9, 4, kTree, expect_pbqp_optimal); }

TEST(GraphTunerPbqp, MatchesBruteForceOnRandomResNetLikeGraphs) {
  for_random_problems(23, 60, 9, 4, kResNetLike, expect_pbqp_optimal);
}

TEST(GraphTunerPbqp, MatchesBruteForceOnDiamondsAndSeriesParallelGraphs) {
  std::mt19937 rng(24);
  for (int trial = 0; trial < 20; ++trial) expect_pbqp_optimal(diamond(rng), "diamond " + std::to_string(trial));
  for_random_problems(25, 60, 9, 4, kSeriesParallel, expect_pbqp_optimal);
}

TEST(GraphTunerPbqp, MatchesBruteForceWithUnconnectedNodes) {
  std::mt19937 rng(26);
  for (int trial = 0; trial < 20; ++trial)
    expect_pbqp_optimal(random_problem(7, {{0, 3}, {3, 6}, {1, 6}}, 4, rng), "trial " + std::to_string(trial));
}

TEST(GraphTunerPbqp, GivesValidAssignmentNoCheaperThanOptimumOnDenseDags) {
  std::mt19937 rng(27);
  const int trials = 60;
  int optimal = 0;
  double worst_ratio = 1.0, ratio_sum = 0.0;
  for (int trial = 0; trial < trials; ++trial) {
    const int num_nodes = std::uniform_int_distribution<int>(4, 8)(rng);
    const LayoutProblem problem = random_problem(num_nodes, dense_dag_edges(num_nodes, 0.7, rng), 4, rng);
    const std::vector<int> states = solve_pbqp(problem);
    ASSERT_EQ(states.size(), problem.node_cost.size());
    const double cost = total_cost(problem, states);  // throws on an invalid state
    const double optimum = total_cost(problem, brute_force(problem));
    EXPECT_GE(cost, optimum * (1 - 1e-9)) << "trial " << trial;
    const double ratio = cost / optimum;
    if (ratio <= 1 + 1e-9) ++optimal;
    worst_ratio = std::max(worst_ratio, ratio);
    ratio_sum += ratio;
  }
  std::cout << "[ report   ] PBQP on " << trials << " dense DAGs: optimal on " << optimal << ", mean cost/optimum "
            << ratio_sum / trials << ", worst " << worst_ratio << "\n";
  RecordProperty("optimal", optimal);
  RecordProperty("worst_ratio", std::to_string(worst_ratio));
}

TEST(GraphTunerPbqp, AgreesWithDpOnSixtyNodeResNetLikeGraphWithSixteenStates) {
  std::mt19937 rng(28);
  const LayoutProblem problem = problem_with_uniform_states(60, resnet_like_edges(60), 16, rng);
  const auto dp_states = solve_dp(problem);
  ASSERT_TRUE(dp_states.has_value());
  expect_same_cost(total_cost(problem, solve_pbqp(problem)), total_cost(problem, *dp_states), "resnet-like");
}

}  // namespace
}  // namespace tessera::autotvm::graph_tuner
