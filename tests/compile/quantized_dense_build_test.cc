// The int8 matrix product (ops/qlinear_dense.h) compiled for the host inside
// a network (quantize -> qlinear_dense -> dequantize) equals the interpreter
// (the integer reference) exactly: with K a multiple of 4 and unsigned
// input, the weight packed for the byte dot product (rows 1 and 7, output
// columns of a classifier's 1000 = 25 blocks of 40, ReLU or not); with K
// odd or signed input, the plain product. The reference itself is the
// product of the dequantized operands in real numbers, quantized, within
// one step.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "compile/build.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "measure/kernel_args.h"
#include "ops/qlinear_dense.h"
#include "ops/quantize.h"
#include "runtime/graph_executor.h"

namespace tessera::build {
namespace {

runtime::NDArray integers(std::vector<int64_t> shape, int lo, int hi, uint32_t seed) {
  runtime::NDArray a(std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(d(rng));
  return a;
}

struct DenseCase {
  int64_t m, n, k;
  std::string x_dtype;
  bool relu;
};

class QLinearDenseBuild : public testing::TestWithParam<DenseCase> {};

TEST_P(QLinearDenseBuild, EqualsTheIntegerReferenceExactly) {
  const DenseCase c = GetParam();
  const ops::QuantizeAttrs xq{0.03f, c.x_dtype == "uint8" ? 120 : -7, c.x_dtype}, yq{0.5f, 9, "uint8"};
  ops::QLinearDenseAttrs a;
  a.x_dtype = c.x_dtype;
  a.output = {xq.scale, yq.scale, yq.zero_point, yq.dtype, c.relu, 0.0f};
  runtime::NDArray scale({c.n});
  for (int64_t j = 0; j < c.n; ++j) scale[j] = 0.002f + 0.0005f * static_cast<float>(j % 7);
  graph::GraphBuilder b;
  const graph::NodeId x = b.input("x", {c.m, c.k});
  const graph::NodeId q = b.add_node(graph::Op::named("quantize"), "q", {x}, xq);
  const graph::NodeId d = b.add_node(
      graph::Op::named("qlinear_dense"), "fc",
      {q, b.constant("w", integers({c.n, c.k}, -127, 127, 1), graph::DataType::kInt8), b.constant("s", std::move(scale)),
       b.constant("b", integers({c.n}, -20000, 20000, 2), graph::DataType::kInt32)},
      a);
  const graph::Graph model = b.finish({b.add_node(graph::Op::named("dequantize"), "y", {d}, yq)});

  std::vector<runtime::NDArray> inputs;
  inputs.emplace_back(std::vector<int64_t>{c.m, c.k});
  inputs[0].fill_random(5, -4.0f, 4.0f);
  const std::vector<runtime::NDArray> want = graph::interpret(model, inputs);
  runtime::GraphExecutor ex(build(model, target::Target::host()).artifact, "dense");
  ex.set_input(0, inputs[0]);
  ex.run();
  const measure::OutputComparison cmp = measure::compare_output(ex.get_output(0), want[0], 0.0);
  EXPECT_TRUE(cmp.ok) << cmp.describe();
  // Not all saturated: the comparison sees values that vary.
  EXPECT_GE(std::set<float>(want[0].data(), want[0].data() + want[0].size()).size(), 12u);

  // The reference: the real product of the dequantized operands, quantized.
  const runtime::NDArray& w = *model.node(*model.find("w")).value;
  const runtime::NDArray& bias = *model.node(*model.find("b")).value;
  const runtime::NDArray& s = *model.node(*model.find("s")).value;
  std::vector<float> stored(static_cast<size_t>(inputs[0].size()));
  ops::reference::quantize(inputs[0].data(), inputs[0].size(), xq, stored.data());
  int off = 0;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      // The bias is folded: x's zero point's share is in it, so x enters as stored.
      double real = bias[j];
      for (int64_t l = 0; l < c.k; ++l) real += static_cast<double>(stored[i * c.k + l]) * w[j * c.k + l];
      double v = std::nearbyint(real * xq.scale * s[j] / yq.scale) + yq.zero_point;
      v = std::clamp(v, c.relu ? 9.0 : 0.0, 255.0);
      const double got = want[0][i * c.n + j] / yq.scale + yq.zero_point;
      ASSERT_LE(std::fabs(got - v), 1.0 + 1e-3) << i << "," << j;
      off += std::fabs(got - v) > 0.5;
    }
  EXPECT_LE(off, static_cast<int>(c.m * c.n / 50 + 1));
}

INSTANTIATE_TEST_SUITE_P(Shapes, QLinearDenseBuild,
                         testing::Values(DenseCase{1, 1000, 512, "uint8", false}, DenseCase{7, 96, 64, "uint8", true},
                                         DenseCase{3, 40, 33, "uint8", false}, DenseCase{2, 24, 16, "int8", true}));

}  // namespace
}  // namespace tessera::build
