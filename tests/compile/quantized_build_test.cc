// A quantized network compiled for the host: its activations stay int8 /
// uint8 between kernels (quantize -> two qlinear_conv2d -> dequantize), its
// weights int8 and biases int32 as constants, and the compiled network
// equals the interpreter (the integer reference) exactly, through an
// artifact written and read back too. A graph that gives a float operator an
// int8 tensor is refused in one line naming the node.
//
// The int8 matrix product (ops/qlinear_dense.h) in a network (quantize ->
// qlinear_dense -> dequantize) equals the interpreter exactly too: with K a
// multiple of 4, unsigned input and weights the host's dot product computes
// exactly, the weight packed for it (rows 1 and 7, a classifier's 1000
// outputs = 25 blocks of 40, blocks of 64 tiled in parts on AVX2, ReLU or
// not; weights within +-64 packed on every host, +-127 where no pair
// saturates, and where pairs would (pmaddubsw) as centered products, or
// weights reaching -128 as two halves within +-64 against the input twice,
// K even); otherwise the plain product (signed input, or K odd with -128
// weights pmaddubsw would saturate). Its reference is
// the product of the stored operands in real numbers, quantized, within one
// step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <set>

#include "compile/build.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "measure/kernel_args.h"
#include "ops/qlinear_conv2d.h"
#include "ops/qlinear_dense.h"
#include "ops/quantize.h"
#include "runtime/artifact.h"
#include "runtime/graph_executor.h"
#include "tessera/error.h"

namespace tessera::build {
namespace {

runtime::NDArray integers(std::vector<int64_t> shape, int lo, int hi, uint32_t seed) {
  runtime::NDArray a(std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<float>(d(rng));
  return a;
}

runtime::NDArray scales(int64_t n, uint32_t seed) {
  runtime::NDArray a({n});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(0.002f, 0.01f);
  for (int64_t i = 0; i < n; ++i) a.data()[i] = d(rng);
  return a;
}

graph::Graph quantized_network() {
  using graph::DataType;
  graph::GraphBuilder b;
  const graph::NodeId x = b.input("x", {1, 3, 12, 12});
  const graph::NodeId q = b.add_node(graph::Op::named("quantize"), "q", {x}, ops::QuantizeAttrs{0.02f, 128, "uint8"});
  ops::QLinearConv2dAttrs first;
  first.conv = ops::Conv2dAttrs::symmetric(1, 1);
  first.x_scale = 0.02f, first.x_zero_point = 128, first.x_dtype = "uint8";
  first.y_scale = 0.05f, first.y_zero_point = 0, first.y_dtype = "uint8";
  first.relu = true;
  const graph::NodeId c1 = b.add_node(
      graph::Op::named("qlinear_conv2d"), "conv1",
      {q, b.constant("w1", integers({8, 3, 3, 3}, -127, 127, 1), DataType::kInt8), b.constant("s1", scales(8, 2)),
       b.constant("b1", integers({8}, -500, 500, 3), DataType::kInt32)},
      first);
  ops::QLinearConv2dAttrs second;
  second.conv = ops::Conv2dAttrs::symmetric(2, 1);
  second.x_scale = 0.05f, second.x_zero_point = 0, second.x_dtype = "uint8";
  second.y_scale = 0.1f, second.y_zero_point = -5, second.y_dtype = "int8";
  const graph::NodeId c2 = b.add_node(
      graph::Op::named("qlinear_conv2d"), "conv2",
      {c1, b.constant("w2", integers({16, 8, 3, 3}, -127, 127, 4), DataType::kInt8), b.constant("s2", scales(16, 5)),
       b.constant("b2", integers({16}, -500, 500, 6), DataType::kInt32)},
      second);
  const graph::NodeId y = b.add_node(graph::Op::named("dequantize"), "y", {c2}, ops::QuantizeAttrs{0.1f, -5, "int8"});
  return b.finish({y});
}

TEST(QuantizedBuild, ActivationsStayInt8BetweenKernelsAndTheNetworkEqualsTheInterpreter) {
  const graph::Graph model = quantized_network();
  BuildResult built = build(model, target::Target::host());
  int quantized = 0;
  for (const auto& t : built.artifact.graph.tensors) quantized += !t.stored_as.empty();
  // q, conv1's input padded to 4 channels and blocked, conv1 (uint8); w1, w2
  // (int8); b1, b2 (int32, folded). conv2's output is dequantized in its kernel.
  // The same on every host: where the byte products are pmaddubsw's (AVX2
  // without VNNI) these weights, within +-127, take centered products, not
  // halves that would read each input twice over (a uint8 copy more each).
  EXPECT_EQ(quantized, 8) << target::Target::host().str();
  std::vector<runtime::NDArray> inputs;
  inputs.emplace_back(std::vector<int64_t>{1, 3, 12, 12});
  inputs.back().fill_random(3, -3.0f, 3.0f);
  std::vector<runtime::NDArray> interpreted = graph::interpret(model, inputs);
  const runtime::NDArray& want = interpreted[0];

  const std::string path = (std::filesystem::temp_directory_path() / "tessera_quantized_build_test.tsr").string();
  runtime::write_artifact(built.artifact, path);
  for (int pass = 0; pass < 2; ++pass) {
    runtime::GraphExecutor ex(pass == 0 ? std::move(built.artifact) : runtime::read_artifact(path), "quantized");
    ex.set_input(0, inputs[0]);
    ex.run();
    const measure::OutputComparison c = measure::compare_output(ex.get_output(0), want, 0.0);
    EXPECT_TRUE(c.ok) << (pass ? "read back: " : "") << c.describe();
  }
  std::filesystem::remove(path);
  // Not all saturated or zero: the check compares values that vary.
  int distinct = 0;
  for (int64_t i = 1; i < want.size(); ++i) distinct += want.data()[i] != want.data()[0];
  EXPECT_GT(distinct, want.size() / 2);
}

TEST(QuantizedBuild, AFloatOperatorGivenAnInt8TensorIsRefusedNamingTheNode) {
  graph::GraphBuilder b;
  const graph::NodeId x = b.input("x", {1, 4, 6, 6});
  const graph::NodeId q = b.add_node(graph::Op::named("quantize"), "q", {x}, ops::QuantizeAttrs{0.1f, 0, "int8"});
  try {
    b.finish({b.relu(q, "act")});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("act"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("input 0 is int8; relu takes float32 (dequantize it first)"), std::string::npos)
        << e.what();
  }
}

// ---- the int8 matrix product ------------------------------------------------

struct DenseCase {
  int64_t m, n, k;
  std::string x_dtype;
  bool relu;
  int most;  // weights in [-most, min(most, 127)]
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
      {q, b.constant("w", integers({c.n, c.k}, -c.most, std::min(c.most, 127), 1), graph::DataType::kInt8),
       b.constant("s", std::move(scale)), b.constant("b", integers({c.n}, -20000, 20000, 2), graph::DataType::kInt32)},
      a);
  const graph::Graph model = b.finish({b.add_node(graph::Op::named("dequantize"), "y", {d}, yq)});

  std::vector<runtime::NDArray> inputs;
  inputs.emplace_back(std::vector<int64_t>{c.m, c.k});
  inputs[0].fill_random(5, -4.0f, 4.0f);
  const std::vector<runtime::NDArray> want = graph::interpret(model, inputs);
  // The host, and AVX2 without VNNI (haswell, pmaddubsw: pairs of products
  // saturate beyond weights of +-64) where the host runs it: packed for the
  // byte dot product only where it computes the weights exactly.
  for (const target::Target& target : {target::Target::host(), target::Target::parse("llvm -mcpu=haswell")}) {
    if (!target.missing_on(target::Target::host()).empty()) continue;
    BuildResult built = build(model, target);
    // Beyond the limit, weights within +-127 take centered products (a
    // signed byte times a weight, within the limit's pairs); others (-128)
    // are each two halves within it (K even: 2K in lanes of 4 bytes).
    const int64_t limit = int8_weight_limit(target);
    const bool centered = c.x_dtype == "uint8" && c.most > limit && c.most <= 127;
    const bool packable = c.x_dtype == "uint8" && (c.most <= limit || centered || (2 * limit >= 128 && c.k % 2 == 0));
    int denses = 0;
    for (const graph::Node& n : built.optimized.nodes())
      if (graph::op_name(n.op) == "qlinear_dense") {
        ++denses;
        EXPECT_EQ(n.attrs_as<ops::QLinearDenseAttrs>().packed, packable) << target.str();
        EXPECT_EQ(n.attrs_as<ops::QLinearDenseAttrs>().centered, centered) << target.str();
      }
    EXPECT_EQ(denses, 1) << target.str();
    runtime::GraphExecutor ex(std::move(built.artifact), "dense");
    ex.set_input(0, inputs[0]);
    ex.run();
    const measure::OutputComparison cmp = measure::compare_output(ex.get_output(0), want[0], 0.0);
    EXPECT_TRUE(cmp.ok) << target.str() << ": " << cmp.describe();
  }
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

INSTANTIATE_TEST_SUITE_P(
    Shapes, QLinearDenseBuild,
    testing::Values(DenseCase{1, 1000, 512, "uint8", false, 64}, DenseCase{7, 96, 64, "uint8", true, 127},
                    DenseCase{7, 128, 64, "uint8", false, 64},
                    DenseCase{6, 64, 96, "uint8", false, 128},  // -128: halves where centered is not exact
                    DenseCase{3, 40, 33, "uint8", false, 127}, DenseCase{2, 24, 16, "int8", true, 127}));

}  // namespace
}  // namespace tessera::build
