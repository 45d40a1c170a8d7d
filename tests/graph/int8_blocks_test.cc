// convert_layout on int8 convolutions: those of unsigned bytes with constant
// weights go into the int8 kernels' blocks (data NCHW<ic>c, weight
// OIHW<ic/4>i<oc>o4i, the zero point's share folded into the bias, input
// channels padded to a multiple of 4) and the graph computes exactly what it
// did; weights beyond a saturating target's limit take centered products
// where within +-127, else are split in two within it; what the blocks
// cannot take (signed input bytes) keeps the NCHW kernel. Depthwise ones go
// into depthwise conv2d's blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

#include "compile/build.h"
#include "driver/kernel_check.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "graph/passes.h"
#include "graph/quantize_network.h"
#include "ops/pooling.h"
#include "ops/qlinear_conv2d.h"
#include "ops/quantize.h"
#include "ops/tensor_layout.h"
#include "runtime/graph_executor.h"

namespace tessera::graph {
namespace {

runtime::NDArray integers(Shape shape, int lo, int hi, uint32_t seed) {
  runtime::NDArray a(std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(d(rng));
  return a;
}

// x (1, C, 9, 9) -> quantize -> qlinear_conv2d 3x3 (O outputs, weights in
// [-most_weight, min(most_weight, 127)]) -> dequantize.
Graph int8_conv(int64_t channels, int64_t outputs, int most_weight, const std::string& x_dtype = "uint8") {
  GraphBuilder b;
  const NodeId x = b.input("x", {1, channels, 9, 9});
  const int64_t zp = x_dtype == "uint8" ? 120 : -3;
  const NodeId q = b.add_node(Op::named("quantize"), "q", {x}, ops::QuantizeAttrs{0.01f, zp, x_dtype});
  ops::QLinearConv2dAttrs a;
  a.conv = ops::Conv2dAttrs::symmetric(1, 1);
  a.x_scale = 0.01f, a.x_zero_point = zp, a.x_dtype = x_dtype;
  a.y_scale = 0.05f, a.y_zero_point = 3, a.y_dtype = "uint8";
  runtime::NDArray scales({outputs});
  for (int64_t i = 0; i < outputs; ++i) scales[i] = 0.001f * static_cast<float>(i + 1);
  const NodeId conv = b.add_node(
      Op::named("qlinear_conv2d"), "conv",
      {q,
       b.constant("w", integers({outputs, channels, 3, 3}, -most_weight, std::min(most_weight, 127), 1),
                  DataType::kInt8),
       b.constant("s", std::move(scales)), b.constant("b", integers({outputs}, -3000, 3000, 2), DataType::kInt32)},
      a);
  return b.finish({b.add_node(Op::named("dequantize"), "y", {conv}, ops::QuantizeAttrs{0.05f, 3, "uint8"})});
}

const Node* find_conv(const Graph& g) {
  for (const Node& n : g.nodes())
    if (op_name(n.op) == "qlinear_conv2d") return &n;
  return nullptr;
}

std::vector<runtime::NDArray> run(const Graph& g) {
  std::vector<runtime::NDArray> inputs;
  inputs.emplace_back(g.node(g.input_ids()[0]).type.shape);
  inputs.back().fill_random(7, -1.5f, 1.5f);
  return interpret(g, inputs);
}

TEST(Int8Blocks, PackedWeightsHoldFourInputChannelsPerLaneAndUnpackBack) {
  const Shape oihw = {32, 16, 3, 3};
  const runtime::NDArray w = integers(oihw, -127, 127, 3);
  const std::vector<float> packed = ops::pack_int8_kernel(w.data(), oihw, 8, 16);
  // (O/16, C/8, KH, KW, 8/4, 16, 4): output channel 17, input channel 13 at (2, 1), tap (1, 2).
  const auto at = [&](int64_t f, int64_t c, int64_t y, int64_t x) { return w[((f * 16 + c) * 3 + y) * 3 + x]; };
  const int64_t index = ((((1 * 2 + 1) * 3 + 1) * 3 + 2) * 2 + 1) * 16 * 4 + 1 * 4 + 1;
  EXPECT_EQ(packed[static_cast<size_t>(index)], at(17, 13, 1, 2));
  const std::vector<float> back = ops::unpack_int8_kernel(packed.data(), oihw, 8, 16);
  EXPECT_TRUE(std::equal(back.begin(), back.end(), w.data()));
  EXPECT_EQ(ops::int8_kernel_layout(8, 16), "OIHW2i16o4i");
  EXPECT_EQ(ops::int8_kernel_blocks("OIHW2i16o4i"), (std::pair<int64_t, int64_t>{8, 16}));
  EXPECT_FALSE(ops::int8_kernel_blocks("OIHW8i16o"));
}

TEST(Int8Blocks, ConvolutionsOfUnsignedBytesGoIntoBlocksAndComputeTheSame) {
  const Graph g = int8_conv(8, 32, 127);
  const Graph blocked = cancel_layout_transforms(convert_layout(g, 16));
  const Node* conv = find_conv(blocked);
  ASSERT_TRUE(conv);
  const auto& a = conv->attrs_as<ops::QLinearConv2dAttrs>();
  EXPECT_EQ(a.conv.data_layout, "NCHW8c");
  EXPECT_EQ(a.conv.kernel_layout, "OIHW2i16o4i");
  EXPECT_EQ(blocked.node(conv->inputs[1]).type.shape, (Shape{2, 1, 3, 3, 2, 16, 4}));
  EXPECT_EQ(blocked.node(conv->inputs[1]).type.dtype, DataType::kInt8);
  // The bias less the zero point's share: bias[f] - 120 * sum(w[f]).
  const Node* original = find_conv(g);
  const runtime::NDArray& w = *g.node(original->inputs[1]).value;
  const runtime::NDArray& bias = *g.node(original->inputs[3]).value;
  const runtime::NDArray& folded = *blocked.node(conv->inputs[3]).value;
  for (int64_t f : {0, 5, 31}) {
    float sum = 0;
    for (int64_t i = 0; i < 72; ++i) sum += w[f * 72 + i];
    EXPECT_EQ(folded[f], bias[f] - 120.0f * sum) << f;
  }
  const auto want = run(g), got = run(blocked);
  ASSERT_EQ(got[0].size(), want[0].size());
  EXPECT_TRUE(std::equal(got[0].data(), got[0].data() + got[0].size(), want[0].data()));
}

TEST(Int8Blocks, WhatTheBlocksCannotTakeKeepsTheNchwKernel) {
  const auto stays = [](const Graph& g, int limit) {
    const Node* conv = find_conv(cancel_layout_transforms(convert_layout(g, 16, {}, false, limit)));
    return conv && conv->attrs_as<ops::QLinearConv2dAttrs>().conv.data_layout == "NCHW";
  };
  EXPECT_TRUE(stays(int8_conv(8, 16, 127, "int8"), 127));  // signed bytes: vpdpbusd reads unsigned
  EXPECT_TRUE(stays(int8_conv(8, 16, 100), 40));           // two halves would still saturate
  EXPECT_FALSE(stays(int8_conv(8, 16, 64), 64));           // within the limit
  EXPECT_FALSE(stays(int8_conv(8, 16, 127), 127));
}

// `g` built for `target` (its optimized graph) and run on the inputs run()
// gives it, or nullopt where this host does not run the target's code.
struct Compiled {
  Graph optimized;
  runtime::NDArray output;
};
std::optional<Compiled> compiled_for(const Graph& g, const target::Target& target) {
  if (!target.missing_on(target::Target::host()).empty()) return std::nullopt;
  build::BuildResult built = build::build(g, target);
  Compiled c{std::move(built.optimized), {}};
  runtime::GraphExecutor ex(std::move(built.artifact), "compiled");
  runtime::NDArray x(g.node(g.input_ids()[0]).type.shape);
  x.fill_random(7, -1.5f, 1.5f);
  ex.set_input(0, x);
  ex.run();
  c.output = ex.get_output(0);
  return c;
}

// Weights beyond a saturating target's limit (pmaddubsw on AVX2 without
// VNNI sums pairs in 16 bits: +-64) but within +-127, onnxruntime's
// symmetric range, take centered products: (x - 128) * w, exact in such
// pairs, the bias folding (x_zp - 128) * sum(w). The same values, exactly,
// interpreted and compiled for that target; no copy of the input.
TEST(Int8Blocks, WeightsWithinInt8OnASaturatingTargetTakeCenteredProducts) {
  const Graph g = int8_conv(3, 16, 127);
  const Graph blocked = cancel_layout_transforms(convert_layout(g, 8, {}, false, 64));
  const Node* conv = find_conv(blocked);
  ASSERT_TRUE(conv);
  EXPECT_TRUE(conv->attrs_as<ops::QLinearConv2dAttrs>().centered);
  EXPECT_EQ(blocked.node(conv->inputs[1]).type.shape, (Shape{2, 1, 3, 3, 1, 8, 4}));
  for (const Node& n : blocked.nodes()) EXPECT_NE(n.op, Op::kConcat) << n.name;
  const auto want = run(g), got = run(blocked);
  EXPECT_TRUE(std::equal(got[0].data(), got[0].data() + got[0].size(), want[0].data()));
  // Within the limit: as before.
  EXPECT_FALSE(find_conv(convert_layout(g, 8, {}, false, 127))->attrs_as<ops::QLinearConv2dAttrs>().centered);

  const auto compiled = compiled_for(g, target::Target::parse("llvm -mcpu=haswell"));
  if (!compiled) GTEST_SKIP() << "this host runs no AVX2";
  EXPECT_TRUE(find_conv(compiled->optimized)->attrs_as<ops::QLinearConv2dAttrs>().centered);
  const runtime::NDArray& out = compiled->output;
  EXPECT_TRUE(std::equal(out.data(), out.data() + out.size(), want[0].data()));
}

// Weights beyond a saturating target's limit that reach -128 are split,
// w = hi + lo each within +-64, against the input's channels read twice: the
// same values, exactly, interpreted and compiled for that target.
TEST(Int8Blocks, WeightsBeyondASaturatingTargetsLimitAreSplitInTwo) {
  const Graph g = int8_conv(3, 16, 128);  // the stem's 3 channels: a lane of 4, twice
  const Graph blocked = cancel_layout_transforms(convert_layout(g, 8, {}, false, 64));
  const Node* conv = find_conv(blocked);
  ASSERT_TRUE(conv);
  // Blocks of the input's own 4 channels, read twice: two copies of its
  // blocks side by side (no transform to NCHW around the copy).
  EXPECT_EQ(conv->attrs_as<ops::QLinearConv2dAttrs>().conv.data_layout, "NCHW4c");
  const Node& packed = blocked.node(conv->inputs[1]);
  EXPECT_EQ(packed.type.shape, (Shape{2, 2, 3, 3, 1, 8, 4}));
  float most = 0;
  for (int64_t i = 0; i < packed.value->size(); ++i) most = std::max(most, std::fabs((*packed.value)[i]));
  EXPECT_EQ(most, 64.0f);  // -128 = -64 + -64, 127 = 63 + 64
  EXPECT_FALSE(conv->attrs_as<ops::QLinearConv2dAttrs>().centered);
  int concats = 0;
  for (const Node& n : blocked.nodes())
    concats += n.op == Op::kConcat && n.type.dtype == DataType::kUInt8 && n.type.shape == Shape{1, 2, 9, 9, 4};
  EXPECT_EQ(concats, 1);
  const auto want = run(g), got = run(blocked);
  EXPECT_TRUE(std::equal(got[0].data(), got[0].data() + got[0].size(), want[0].data()));

  const target::Target haswell = target::Target::parse("llvm -mcpu=haswell");
  ASSERT_EQ(build::int8_weight_limit(haswell), 64);
  const auto compiled = compiled_for(g, haswell);
  if (!compiled) GTEST_SKIP() << "this host runs no AVX2";
  EXPECT_EQ(find_conv(compiled->optimized)->attrs_as<ops::QLinearConv2dAttrs>().conv.data_layout, "NCHW4c");
  const runtime::NDArray& out = compiled->output;
  EXPECT_TRUE(std::equal(out.data(), out.data() + out.size(), want[0].data()));
}

// A convolution whose input channels are no multiple of 4 (a first
// convolution's 3) takes a padding channel of zero-point bytes and zero
// weights: blocked, the same values.
TEST(Int8Blocks, InputChannelsArePaddedToWholeLanes) {
  const Graph g = int8_conv(3, 16, 127);
  const Graph blocked = cancel_layout_transforms(convert_layout(g, 16));
  const Node* conv = find_conv(blocked);
  ASSERT_TRUE(conv);
  EXPECT_EQ(conv->attrs_as<ops::QLinearConv2dAttrs>().conv.data_layout, "NCHW4c");
  EXPECT_EQ(blocked.node(conv->inputs[1]).type.shape, (Shape{1, 1, 3, 3, 1, 16, 4}));
  int pads = 0;
  for (const Node& n : blocked.nodes()) pads += n.op == Op::kPad && n.type.dtype == DataType::kUInt8;
  EXPECT_EQ(pads, 1);
  const auto want = run(g), got = run(blocked);
  EXPECT_TRUE(std::equal(got[0].data(), got[0].data() + got[0].size(), want[0].data()));
}

// A max pooling between int8 convolutions (VGG's, ResNet's first) pools the
// int8 values in their scale and zero point, in blocks; the network compiled
// equals the integer reference kernel by kernel.
TEST(Int8Blocks, MaxPoolingPoolsInt8ValuesAndCompilesExactly) {
  GraphBuilder b;
  const NodeId x = b.input("x", {1, 8, 14, 14});
  NodeId v = b.conv2d(x, b.random_constant("c0.w", {16, 8, 3, 3}, -0.3f, 0.3f), ops::Conv2dAttrs::symmetric(1, 1), "c0");
  v = b.relu(v, "c0.relu");
  ops::Pool2dAttrs pool;
  pool.kernel_h = pool.kernel_w = 3, pool.stride_h = pool.stride_w = 2;
  pool.pad_top = pool.pad_left = pool.pad_bottom = pool.pad_right = 1;
  v = b.max_pool2d(v, pool, "pool");
  v = b.conv2d(v, b.random_constant("c1.w", {16, 16, 3, 3}, -0.3f, 0.3f), ops::Conv2dAttrs::symmetric(1, 1), "c1");
  const Graph model = optimize(b.finish({v}), PassOptions{.block = 0, .winograd = false});
  std::vector<std::vector<runtime::NDArray>> samples(1);
  samples[0].emplace_back(Shape{1, 8, 14, 14});
  samples[0][0].fill_random(3);
  // As compile does for this host: weights within what its dot product
  // computes exactly (7 bits where pairs saturate: AVX2 without VNNI).
  const target::Target host = target::Target::host();
  QuantizeOptions o;
  o.skip_layers = {};
  o.weight_max = build::int8_weight_limit(host) == 127 ? 127 : 63;
  const Graph q = quantize_network(model, samples, o);
  int int8_pools = 0;
  for (const Node& n : q.nodes()) {
    if (n.op != Op::kMaxPool2d) continue;
    EXPECT_EQ(n.type.dtype, DataType::kUInt8);
    EXPECT_EQ(op_name(q.node(n.inputs[0]).op), "qlinear_conv2d");
    ++int8_pools;
  }
  EXPECT_EQ(int8_pools, 1);

  const Graph blocked = build::optimize_for_target(q, host, {}, false);
  int blocked_pools = 0;
  for (const Node& n : blocked.nodes())
    blocked_pools += n.op == Op::kMaxPool2d && ops::is_channel_blocked(n.attrs_as<ops::Pool2dAttrs>().layout) &&
                     n.type.dtype == DataType::kUInt8;
  EXPECT_EQ(blocked_pools, 1);
  build::BuildResult built = build::build_optimized(model, blocked, host);
  runtime::GraphExecutor ex(std::move(built.artifact), "pool", /*keep_every_tensor=*/true);
  ex.set_input(0, samples[0][0]);
  ex.run();
  const driver::KernelCheck check = driver::check_each_kernel(built.optimized, ex, samples[0]);
  EXPECT_GE(check.integer_values, 3);
  EXPECT_EQ(check.integer_exact, check.integer_values) << check.first_difference;
}

// A depthwise int8 convolution (MobileNet's) with a ReLU6 saturation: blocked
// as the float depthwise is, of signed bytes too (no dot product), and the
// compiled network equals the integer reference kernel by kernel.
TEST(Int8Blocks, DepthwiseConvolutionsGoIntoBlocksAndCompileExactly) {
  for (const char* x_dtype : {"uint8", "int8"}) {
    SCOPED_TRACE(x_dtype);
    GraphBuilder b;
    const NodeId x = b.input("x", {1, 24, 10, 10});
    const int64_t zp = std::string(x_dtype) == "uint8" ? 128 : -5;
    const NodeId q = b.add_node(Op::named("quantize"), "q", {x}, ops::QuantizeAttrs{0.01f, zp, x_dtype});
    ops::QLinearConv2dAttrs a;
    a.conv = ops::Conv2dAttrs::symmetric(2, 1, 1, 24);
    a.x_scale = 0.01f, a.x_zero_point = zp, a.x_dtype = x_dtype;
    a.y_scale = 0.002f, a.y_zero_point = 0, a.y_dtype = "uint8";
    a.relu = true, a.clip_max = 0.3f;  // saturates at round(0.3 / 0.002) = 150
    runtime::NDArray scales({24});
    for (int64_t i = 0; i < 24; ++i) scales[i] = 0.002f + 0.0005f * static_cast<float>(i);
    const NodeId conv = b.add_node(
        Op::named("qlinear_conv2d"), "dw",
        {q, b.constant("w", integers({24, 1, 3, 3}, -127, 127, 4), DataType::kInt8), b.constant("s", std::move(scales)),
         b.constant("b", integers({24}, -300, 300, 5), DataType::kInt32)},
        a);
    const Graph g = b.finish({b.add_node(Op::named("dequantize"), "y", {conv}, ops::QuantizeAttrs{0.002f, 0, "uint8"})});
    const Graph blocked = cancel_layout_transforms(convert_layout(g, 16));
    const Node* dw = find_conv(blocked);
    ASSERT_TRUE(dw);
    EXPECT_EQ(dw->attrs_as<ops::QLinearConv2dAttrs>().conv.data_layout, "NCHW24c");
    EXPECT_EQ(dw->attrs_as<ops::QLinearConv2dAttrs>().conv.kernel_layout, "OIHW1i24o");
    const auto want = run(g), got = run(blocked);
    EXPECT_TRUE(std::equal(got[0].data(), got[0].data() + got[0].size(), want[0].data()));
    float most = 0;
    for (int64_t i = 0; i < want[0].size(); ++i) most = std::max(most, want[0][i]);
    EXPECT_FLOAT_EQ(most, 150 * 0.002f);  // the ReLU6's clip reached, and not passed

    build::BuildResult built = build::build_optimized(g, blocked, target::Target::host());
    runtime::GraphExecutor ex(std::move(built.artifact), "dw", /*keep_every_tensor=*/true);
    std::vector<runtime::NDArray> inputs;
    inputs.emplace_back(Shape{1, 24, 10, 10});
    inputs.back().fill_random(7, -1.5f, 1.5f);
    ex.set_input(0, inputs[0]);
    ex.run();
    const driver::KernelCheck check = driver::check_each_kernel(built.optimized, ex, inputs);
    EXPECT_GE(check.integer_values, 2);
    EXPECT_EQ(check.integer_exact, check.integer_values) << check.first_difference;
  }
}

}  // namespace
}  // namespace tessera::graph
