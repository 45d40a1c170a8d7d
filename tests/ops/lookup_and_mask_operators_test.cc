// The operators an embedding and an attention mask computed at run time need
// (issue 28): take (ops/take.cc: ONNX Gather by token ids an input carries)
// and the comparisons, logic and where of ops/compare.cc. Each compiled
// kernel and each reference is checked against the definition written here
// again, with negative and out-of-range ids and NumPy broadcasting; and the
// executor's integer inputs refuse values that are not whole numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "graph/builder.h"
#include "ops/operator.h"
#include "ops/take.h"
#include "ops_test_util.h"
#include "run_graph.h"
#include "tessera/error.h"

namespace tessera::ops {
namespace {

using test::expect_close;
using test::run_both;

TEST(TakeOperator, PicksRowsByIdsCountingNegativesFromTheEndAndClampingTheRest) {
  // A (5, 3) table; ids (2, 3) including -1 (the last row), 9 (past the end:
  // the last row) and -8 (before the start: the first row).
  const Shape table_shape{5, 3}, ids_shape{2, 3};
  std::vector<float> table(15);
  for (size_t i = 0; i < table.size(); ++i) table[i] = 0.5f + static_cast<float>(i);
  const std::vector<float> ids = {0, 3, -1, 2, 9, -8};
  const std::vector<int64_t> row = {0, 3, 4, 2, 4, 0};
  graph::GraphBuilder b;
  graph::NodeId t = b.input("table", table_shape), i = b.input("ids", ids_shape, graph::DataType::kInt64);
  graph::NodeId y = b.add_node(graph::Op::named("take"), "y", {t, i}, TakeAttrs{0});
  const graph::Graph g = b.finish({y});
  EXPECT_EQ(g.node(y).type.shape, (Shape{2, 3, 3}));
  std::vector<double> want;
  for (int64_t r : row)
    for (int64_t c = 0; c < 3; ++c) want.push_back(table[static_cast<size_t>(r * 3 + c)]);
  const auto o = run_both(g, {{table_shape, table}, {ids_shape, ids}});
  expect_close(o.interpreted, want, 0, "reference take");
  expect_close(o.compiled, want, 0, "compiled take");
}

TEST(TakeOperator, AlongAnInnerAxisKeepsTheAxesAroundIt) {
  // data (2, 4, 3) by ids (5,) along axis 1: y[a, k, c] = data[a, ids[k], c].
  const Shape data_shape{2, 4, 3};
  const std::vector<float> data = test::random_data(24, 5), ids = {3, 0, 0, -2, 1};
  graph::GraphBuilder b;
  graph::NodeId d = b.input("data", data_shape), i = b.input("ids", {5}, graph::DataType::kInt64);
  graph::NodeId y = b.add_node(graph::Op::named("take"), "y", {d, i}, TakeAttrs{1});
  const graph::Graph g = b.finish({y});
  ASSERT_EQ(g.node(y).type.shape, (Shape{2, 5, 3}));
  std::vector<double> want;
  for (int64_t a = 0; a < 2; ++a)
    for (float id : ids) {
      const auto r = static_cast<int64_t>(id < 0 ? id + 4 : id);
      for (int64_t c = 0; c < 3; ++c) want.push_back(data[static_cast<size_t>((a * 4 + r) * 3 + c)]);
    }
  const auto o = run_both(g, {{data_shape, data}, {{5}, ids}});
  expect_close(o.interpreted, want, 0, "reference take axis 1");
  expect_close(o.compiled, want, 0, "compiled take axis 1");
  EXPECT_THROW(find_operator("take").infer_shape({{2, 4}, {3}}, TakeAttrs{2}), Error);
}

struct ComparisonCase {
  std::string op;
  std::function<bool(float, float)> holds;
};

TEST(MaskOperators, ComparisonsAndLogicGiveOneOrZeroWithBroadcasting) {
  const std::vector<ComparisonCase> cases = {
      {"equal", [](float x, float y) { return x == y; }},
      {"not_equal", [](float x, float y) { return x != y; }},
      {"less", [](float x, float y) { return x < y; }},
      {"less_equal", [](float x, float y) { return x <= y; }},
      {"greater", [](float x, float y) { return x > y; }},
      {"greater_equal", [](float x, float y) { return x >= y; }},
      {"logical_and", [](float x, float y) { return x != 0 && y != 0; }},
      {"logical_or", [](float x, float y) { return x != 0 || y != 0; }},
      {"logical_xor", [](float x, float y) { return (x != 0) != (y != 0); }},
  };
  // (2, 1, 3) with (4, 1) to (2, 4, 3); values from {-1, 0, 1, 2} so that
  // equal pairs and zeros (false) occur.
  const Shape sa{2, 1, 3}, sb{4, 1};
  const std::vector<float> a = {0, 1, 2, -1, 1, 0}, bv = {1, 0, 2, -1};
  for (const ComparisonCase& c : cases) {
    std::vector<double> want;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t k = 0; k < 3; ++k) want.push_back(c.holds(a[static_cast<size_t>(i * 3 + k)], bv[static_cast<size_t>(j)]) ? 1 : 0);
    graph::GraphBuilder b;
    graph::NodeId x = b.input("a", sa), y = b.input("b", sb);
    const graph::Graph g = b.finish({b.add_node(graph::Op::named(c.op), "y", {x, y})});
    const auto o = run_both(g, {{sa, a}, {sb, bv}});
    expect_close(o.interpreted, want, 0, "reference " + c.op);
    expect_close(o.compiled, want, 0, "compiled " + c.op);
  }
  graph::GraphBuilder b;
  graph::NodeId x = b.input("a", sa);
  const graph::Graph g = b.finish({b.add_node(graph::Op::named("logical_not"), "y", {x})});
  std::vector<double> want;
  for (float v : a) want.push_back(v == 0 ? 1 : 0);
  const auto o = run_both(g, {{sa, a}});
  expect_close(o.interpreted, want, 0, "reference logical_not");
  expect_close(o.compiled, want, 0, "compiled logical_not");
}

TEST(MaskOperators, WherePicksPerElementFromThreeBroadcastInputs) {
  // A causal mask (4, 4) choosing between scores (2, 4, 4) and a fill (1,):
  // the form GPT-2's attention takes.
  const Shape sc{4, 4}, sx{2, 4, 4}, sy{1};
  std::vector<float> cond(16);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j) cond[static_cast<size_t>(i * 4 + j)] = j <= i ? 1.0f : 0.0f;
  cond[1] = 0.25f;  // any non-zero value is true
  const std::vector<float> x = test::random_data(32, 9), fill = {-1e9f};
  std::vector<double> want;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t e = 0; e < 16; ++e) want.push_back(cond[static_cast<size_t>(e)] != 0 ? x[static_cast<size_t>(n * 16 + e)] : fill[0]);
  graph::GraphBuilder b;
  graph::NodeId c = b.input("cond", sc), xi = b.input("x", sx), yi = b.input("y", sy);
  const graph::Graph g = b.finish({b.add_node(graph::Op::named("where"), "out", {c, xi, yi})});
  const auto o = run_both(g, {{sc, cond}, {sx, x}, {sy, fill}});
  expect_close(o.interpreted, want, 0, "reference where");
  expect_close(o.compiled, want, 0, "compiled where");
}

TEST(IntegerInputs, TakeOnlyWholeNumbersAndGetZerosAndOnesAsRandomStandIns) {
  graph::GraphBuilder b;
  graph::NodeId t = b.input("table", {3, 2}), i = b.input("input_ids", {1, 4}, graph::DataType::kInt64);
  const graph::Graph g = b.finish({b.add_node(graph::Op::named("take"), "y", {t, i}, TakeAttrs{0})});
  build::BuildResult built = build::build(g, target::Target::host());
  runtime::GraphExecutor ex(std::move(built.artifact), "ids");
  EXPECT_FALSE(ex.input_is_integer(0));
  EXPECT_TRUE(ex.input_is_integer(1));
  try {
    ex.set_input(1, test::array_of({1, 4}, {0, 1, 2.5f, 1}));
    ADD_FAILURE() << "2.5 was taken as a token id";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'input_ids' holds integers (token ids); element 2 is 2.5"),
              std::string::npos)
        << e.what();
  }
  const runtime::NDArray ids = ex.random_input(1);
  bool saw[2] = {false, false};
  for (int64_t k = 0; k < ids.size(); ++k) {
    ASSERT_TRUE(ids[k] == 0.0f || ids[k] == 1.0f) << ids[k];
    saw[static_cast<int>(ids[k])] = true;
  }
  const runtime::NDArray floats = ex.random_input(0);
  EXPECT_TRUE(std::any_of(floats.data(), floats.data() + floats.size(), [](float v) { return v != std::floor(v); }));
  ex.set_random_inputs();
  ex.run();
}

}  // namespace
}  // namespace tessera::ops
