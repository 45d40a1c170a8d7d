// The math operators transformers and modern CNNs need (issue 28): the unary
// activations (src/ops/unary_math.cc), the broadcasting binaries
// (ops/elementwise.cc) and layer_norm (ops/layer_norm.cc). Each compiled
// kernel and each reference is checked against the operator's formula,
// written here again in double, including NaN, infinities and broadcasting.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "compile/build.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "ops/layer_norm.h"
#include "ops/operator.h"
#include "ops/reduce.h"
#include "ops/slice.h"
#include "ops/unary_math.h"
#include "ops_test_util.h"
#include "run_graph.h"
#include "runtime/graph_executor.h"
#include "target/target.h"
#include "tessera/error.h"

namespace tessera::ops {
namespace {

using test::Input;
using test::Outputs;
using test::run_both;
using test::values_of;
using test::array_of;
using test::expect_close;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

struct UnaryCase {
  std::string op;
  Attrs attrs;
  std::function<double(double)> formula;
  bool positive_domain = false;  // log, sqrt: inputs in (0, 6]
};

std::vector<UnaryCase> unary_cases() {
  const double root2 = std::sqrt(2.0), c = std::sqrt(2.0 / M_PI);
  return {
      {"erf", NoAttrs{}, [](double x) { return std::erf(x); }},
      {"gelu", GeluAttrs{}, [root2](double x) { return 0.5 * x * (1 + std::erf(x / root2)); }},
      {"gelu", GeluAttrs{true}, [c](double x) { return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x))); }},
      {"tanh", NoAttrs{}, [](double x) { return std::tanh(x); }},
      {"exp", NoAttrs{}, [](double x) { return std::exp(x); }},
      {"log", NoAttrs{}, [](double x) { return std::log(x); }, true},
      {"sqrt", NoAttrs{}, [](double x) { return std::sqrt(x); }, true},
      {"reciprocal", NoAttrs{}, [](double x) { return 1 / x; }, true},
      {"negative", NoAttrs{}, [](double x) { return -x; }},
      {"abs", NoAttrs{}, [](double x) { return std::fabs(x); }},
      {"hard_sigmoid", HardSigmoidAttrs{0.25f, 0.4f},
       [](double x) { return std::isnan(x) ? x : std::clamp(0.25 * x + 0.4, 0.0, 1.0); }},
      {"silu", NoAttrs{}, [](double x) { return x / (1 + std::exp(-x)); }},
  };
}

// 3 x 37 values (a vector tail on every host) spread over [-6, 6] or (0, 6],
// the last three NaN, +inf and -inf.
std::vector<float> unary_inputs(bool positive) {
  std::vector<float> x(3 * 37);
  for (size_t i = 0; i + 3 < x.size(); ++i) {
    const float t = static_cast<float>(i) / static_cast<float>(x.size() - 4);
    x[i] = positive ? 0.01f + 5.99f * t : -6.0f + 12.0f * t;
  }
  x[x.size() - 3] = kNaN, x[x.size() - 2] = kInf, x[x.size() - 1] = positive ? kInf : -kInf;
  return x;
}

TEST(MathOperators, EachUnaryKernelAndReferenceFollowTheFormula) {
  for (const UnaryCase& c : unary_cases()) {
    const std::string what = c.op + " " + c.attrs.to_string();
    const Operator& op = find_operator(c.op);
    EXPECT_EQ(op.pattern, FusionPattern::kElementwise) << what;
    std::vector<float> x = unary_inputs(c.positive_domain);
    if (c.op == "gelu") x.back() = kNaN;  // gelu(-inf) is -inf * 0 by the formula, which nobody relies on
    std::vector<double> want;
    for (float v : x) want.push_back(c.formula(v));

    graph::GraphBuilder b;
    graph::NodeId in = b.input("x", {3, 37});
    graph::NodeId y = b.add_node(graph::Op::named(c.op), "y", {in}, c.attrs);
    const Outputs out = run_both(b.finish({y}), {{{3, 37}, x}});
    expect_close(out.interpreted, want, 1e-6, "reference " + what, x);
    expect_close(out.compiled, want, 2e-6, "compiled " + what, x);
  }
}

// erf and tanh are odd and start as a line through 0 (erf x ~ 1.128 x, tanh
// x ~ x): a kernel computing them as 1 - (something near 1) keeps an
// absolute error of ~1e-7 there, a relative one of 15 % at x = 1e-5 and 0
// for 1e-30 (what Abramowitz-Stegun's erf and tanh from exp gave). Small
// arguments keep their relative precision, and over [-8, 8] every value is
// within 5e-7 of libm's.
TEST(MathOperators, ErfAndTanhKeepTheirRelativePrecisionNearZeroAndAreCloseEverywhere) {
  std::vector<float> tiny, wide;
  for (float v = 1e-30f; v < 1.0f; v *= 3.7f) tiny.push_back(v), tiny.push_back(-v);
  for (int i = 0; i <= 4000; ++i) wide.push_back(-8.0f + 16.0f * static_cast<float>(i) / 4000.0f);
  const std::vector<std::pair<std::string, double (*)(double)>> functions = {
      {"erf", [](double v) { return std::erf(v); }}, {"tanh", [](double v) { return std::tanh(v); }}};
  for (const auto& [name, f] : functions) {
    for (const std::vector<float>* x : {&tiny, &wide}) {
      const Shape shape{static_cast<int64_t>(x->size())};
      graph::GraphBuilder b;
      graph::NodeId in = b.input("x", shape);
      graph::NodeId y = b.add_node(graph::Op::named(name), "y", {in});
      const std::vector<float> got = run_both(b.finish({y}), {{shape, *x}}).compiled;
      ASSERT_EQ(got.size(), x->size());
      for (size_t i = 0; i < x->size(); ++i) {
        const double want = f((*x)[i]);
        if (x == &tiny)
          EXPECT_LE(std::fabs(got[i] - want), 1e-6 * std::fabs(want)) << name << "(" << (*x)[i] << ") = " << got[i];
        else
          EXPECT_LE(std::fabs(got[i] - want), 5e-7) << name << "(" << (*x)[i] << ") = " << got[i];
      }
    }
  }
}

TEST(MathOperators, GeluFusesIntoTheDenseBeforeIt) {
  graph::GraphBuilder b(5);
  graph::NodeId x = b.input("x", {4, 32});
  graph::NodeId y = b.dense(x, b.random_constant("w", {48, 32}, -0.3f, 0.3f), "fc");
  y = b.add_node(graph::Op::named("gelu"), "act", {y}, GeluAttrs{});
  const graph::Graph g = b.finish({y});
  const build::BuildResult plan = build::build(g, target::Target::host(), {.compile = false});
  ASSERT_EQ(plan.kernels.size(), 1u) << "gelu has a kernel of its own";
  const Outputs out = run_both(g, {{{4, 32}, test::random_data(4 * 32, 3)}});
  EXPECT_LT(test::max_relative_error(out.compiled, out.interpreted), 1e-5);
}

struct BinaryCase {
  std::string op;
  std::function<double(double, double)> formula;
};

TEST(MathOperators, BinaryOperatorsBroadcastAndKeepNaN) {
  const std::vector<BinaryCase> cases = {
      {"subtract", [](double a, double b) { return a - b; }},
      {"divide", [](double a, double b) { return a / b; }},
      {"maximum", [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }},
      {"minimum", [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }},
      {"power", [](double a, double b) { return std::pow(a, b); }},
  };
  // (2, 3, 1, 5) with (3, 4, 1): numpy broadcasting to (2, 3, 4, 5).
  const Shape sa{2, 3, 1, 5}, sb{3, 4, 1}, so{2, 3, 4, 5};
  std::vector<float> a = test::random_data(30, 1), bvals = test::random_data(12, 2);
  for (float& v : bvals) v = v < 0 ? v - 0.5f : v + 0.5f;  // no division by ~0
  a[7] = kNaN, bvals[5] = kNaN;
  for (const BinaryCase& c : cases) {
    std::vector<float> x = a, y = bvals;
    if (c.op == "power") {  // positive bases to any power; negative ones to whole powers
      for (float& v : x) v = std::fabs(v) + 0.1f;
      for (size_t i = 0; i < 6; ++i) y[i] = static_cast<float>(static_cast<int>(i) - 2), x[i] = -x[i];
    }
    std::vector<double> want;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k)
          for (int64_t l = 0; l < 5; ++l) want.push_back(c.formula(x[(i * 3 + j) * 5 + l], y[j * 4 + k]));
    graph::GraphBuilder b;
    graph::NodeId ia = b.input("a", sa), ib = b.input("b", sb);
    graph::NodeId out = b.add_node(graph::Op::named(c.op), "y", {ia, ib});
    const graph::Graph g = b.finish({out});
    EXPECT_EQ(g.node(out).type.shape, so);
    const Outputs o = run_both(g, {{sa, x}, {sb, y}});
    expect_close(o.interpreted, want, 1e-6, "reference " + c.op);
    expect_close(o.compiled, want, 2e-6, "compiled " + c.op);
  }
  // Shapes that do not broadcast name both.
  graph::GraphBuilder b;
  graph::NodeId ia = b.input("a", {2, 3}), ib = b.input("b", {4});
  try {
    b.add_node(graph::Op::named("subtract"), "bad", {ia, ib});
    ADD_FAILURE() << "(2, 3) - (4) was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("do not broadcast"), std::string::npos) << e.what();
  }
}

// y = (x - mean) / sqrt(var + eps) * scale + bias over the axes from `axis` on.
std::vector<double> layer_norm_formula(const std::vector<float>& x, const std::vector<float>& scale,
                                       const std::vector<float>& bias, int64_t row, double eps) {
  std::vector<double> y;
  for (size_t start = 0; start < x.size(); start += static_cast<size_t>(row)) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < row; ++i) mean += x[start + i];
    mean /= static_cast<double>(row);
    for (int64_t i = 0; i < row; ++i) var += (x[start + i] - mean) * (x[start + i] - mean);
    var /= static_cast<double>(row);
    for (int64_t i = 0; i < row; ++i) y.push_back((x[start + i] - mean) / std::sqrt(var + eps) * scale[i] + bias[i]);
  }
  return y;
}

TEST(MathOperators, LayerNormOverTheLastAxisOrSeveralMatchesTheFormula) {
  struct Case {
    Shape shape;
    int64_t axis;
  };
  // Rows of the last axis run the rows schedule (partial sums in vectors of
  // 12, 10, 16 and 7 lanes at 16); several axes the default one.
  for (const Case& c :
       {Case{{2, 5, 24}, -1}, Case{{2, 3, 4, 6}, -2}, Case{{3, 40}, 1}, Case{{2, 3, 48}, -1}, Case{{4, 7}, -1}}) {
    const Shape inner(c.shape.begin() + (c.axis < 0 ? c.axis + static_cast<int64_t>(c.shape.size()) : c.axis),
                      c.shape.end());
    const int64_t row = num_elements(inner);
    std::vector<float> x = test::random_data(num_elements(c.shape), 4);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 3.0f + 2.0f * x[i];  // a mean far from 0
    const std::vector<float> scale = test::random_data(row, 5), bias = test::random_data(row, 6);
    LayerNormAttrs a;
    a.axis = c.axis;
    a.epsilon = 1e-3f;
    graph::GraphBuilder b;
    graph::NodeId in = b.input("x", c.shape);
    graph::NodeId y = b.add_node(graph::Op::named("layer_norm"), "ln",
                                 {in, b.constant("scale", array_of(inner, scale)),
                                  b.constant("bias", array_of(inner, bias))},
                                 a);
    const Outputs o = run_both(b.finish({y}), {{c.shape, x}});
    const std::vector<double> want = layer_norm_formula(x, scale, bias, row, 1e-3);
    const std::string what = "layer_norm " + shape_to_string(c.shape) + " axis " + std::to_string(c.axis);
    expect_close(o.interpreted, want, 1e-5, "reference " + what);
    expect_close(o.compiled, want, 1e-5, "compiled " + what);
  }
  // A scale that is not shaped like the normalised axes is named.
  graph::GraphBuilder b;
  graph::NodeId in = b.input("x", {2, 8});
  try {
    b.add_node(graph::Op::named("layer_norm"), "ln",
               {in, b.constant("s", runtime::NDArray({4})), b.constant("b", runtime::NDArray({8}))}, LayerNormAttrs{});
    ADD_FAILURE() << "a scale of 4 for rows of 8 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scale [4] does not match the normalised axes [8]"), std::string::npos)
        << e.what();
  }
}

// The reductions of (2, 3, 4, 5) over axes {1, 3} (and {-1}, and all), with
// and without keepdims, against sums written here; a NaN in a row makes the
// row's max and min NaN.
TEST(MathOperators, ReductionsOverAnyAxesFollowTheirDefinitions) {
  const Shape shape{2, 3, 4, 5};
  std::vector<float> x = test::random_data(num_elements(shape), 8);
  x[17] = kNaN;  // in row (0, *, 3, *) for axes {1, 3}: element (0, 0, 3, 2)
  auto at = [&](int64_t i, int64_t j, int64_t k, int64_t l) { return static_cast<double>(x[((i * 3 + j) * 4 + k) * 5 + l]); };
  struct Case {
    std::string op;
    std::vector<int64_t> axes;
    bool keepdims;
    Shape out;
  };
  const std::vector<Case> cases = {
      {"reduce_sum", {1, 3}, true, {2, 1, 4, 1}},  {"reduce_mean", {3, 1}, false, {2, 4}},
      {"reduce_max", {1, -1}, true, {2, 1, 4, 1}}, {"reduce_min", {1, 3}, false, {2, 4}},
      {"reduce_l2", {-3, -1}, false, {2, 4}},      {"reduce_sum", {}, false, {}},
  };
  for (const Case& c : cases) {
    std::vector<double> want;
    if (c.axes.empty()) {
      double s = 0;
      for (float v : x) s += v;
      want.push_back(s);
    } else {
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t k = 0; k < 4; ++k) {
          double sum = 0, sq = 0, mx = -INFINITY, mn = INFINITY;
          bool nan = false;
          for (int64_t j = 0; j < 3; ++j)
            for (int64_t l = 0; l < 5; ++l) {
              const double v = at(i, j, k, l);
              sum += v, sq += v * v, nan |= std::isnan(v);
              mx = std::max(mx, v), mn = std::min(mn, v);
            }
          if (c.op == "reduce_sum") want.push_back(sum);
          if (c.op == "reduce_mean") want.push_back(sum / 15);
          if (c.op == "reduce_l2") want.push_back(std::sqrt(sq));
          if (c.op == "reduce_max") want.push_back(nan ? NAN : mx);
          if (c.op == "reduce_min") want.push_back(nan ? NAN : mn);
        }
    }
    ReduceAttrs a;
    a.axes = c.axes;
    a.keepdims = c.keepdims;
    graph::GraphBuilder b;
    graph::NodeId y = b.add_node(graph::Op::named(c.op), "y", {b.input("x", shape)}, a);
    const graph::Graph g = b.finish({y});
    const std::string what = c.op + " " + a.to_string();
    EXPECT_EQ(g.node(y).type.shape, c.out) << what;
    const Outputs o = run_both(g, {{shape, x}});
    expect_close(o.interpreted, want, 1e-6, "reference " + what);
    expect_close(o.compiled, want, 1e-5, "compiled " + what);
  }
  // An axis out of range, or given twice, is refused.
  for (const std::vector<int64_t>& axes : {std::vector<int64_t>{4}, std::vector<int64_t>{1, -3}}) {
    ReduceAttrs a;
    a.axes = axes;
    graph::GraphBuilder b;
    EXPECT_THROW(b.add_node(graph::Op::named("reduce_sum"), "y", {b.input("x", shape)}, a), Error) << a.to_string();
  }
}

// strided_slice and broadcast_to refuse what selects nothing or does not
// broadcast, naming the axis; what they accept matches onnxruntime in the
// op_slice_split and op_gather_expand_where models (tests/graph).
TEST(MathOperators, SlicesAndBroadcastsRefuseImpossibleShapes) {
  const Operator& slice = find_operator("strided_slice");
  auto slice_error = [&](StridedSliceAttrs a) {
    try {
      slice.infer_shape({{4, 6}}, a);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(slice.infer_shape({{4, 6}}, StridedSliceAttrs{{1, 5}, {4, -1}, {2, -2}}), (Shape{2, 3}));
  EXPECT_NE(slice_error({{0, 0}, {4, 6}, {1, 0}}).find("axis 1 has step 0"), std::string::npos);
  EXPECT_NE(slice_error({{4, 0}, {4, 6}, {1, 1}}).find("axis 0 begins at 4, outside 0..3"), std::string::npos);
  EXPECT_NE(slice_error({{2, 0}, {2, 6}, {1, 1}}).find("axis 0 selects nothing"), std::string::npos);
  EXPECT_NE(slice_error({{0}, {4}, {1}}).find("one entry per axis"), std::string::npos);
  const Operator& broadcast = find_operator("broadcast_to");
  EXPECT_EQ(broadcast.infer_shape({{3, 1}}, BroadcastToAttrs{{2, 1, 5}}), (Shape{2, 3, 5}));
  EXPECT_THROW(broadcast.infer_shape({{3, 2}}, BroadcastToAttrs{{4}}), Error);
}

}  // namespace
}  // namespace tessera::ops
