// The quantize pass on a small CNN (three convolutions with biases and
// ReLUs, a residual add, a pool and a dense): the convolutions become
// qlinear_conv2d (the first kept float by default), the residual add a
// qlinear_add, consecutive quantized values pass int8 straight on (no
// dequantize/quantize between them),
// weights are quantized per output channel, and the quantized network
// interpreted stays within a few percent of the float one.
#include "graph/quantize_network.h"

#include <gtest/gtest.h>

#include <cmath>

#include "graph/builder.h"
#include "graph/interpreter.h"
#include "graph/passes.h"
#include "measure/kernel_args.h"
#include "ops/conv2d.h"
#include "ops/qlinear_add.h"
#include "ops/qlinear_conv2d.h"
#include "tessera/error.h"

namespace tessera::graph {
namespace {

Graph small_cnn() {
  GraphBuilder b;
  const NodeId x = b.input("x", {1, 3, 16, 16});
  auto conv = [&](NodeId in, int64_t out, int64_t in_ch, const std::string& name, bool relu) {
    NodeId c = b.conv2d(in, b.random_constant(name + ".w", {out, in_ch, 3, 3}, -0.3f, 0.3f), ops::Conv2dAttrs::symmetric(1, 1),
                        name);
    c = b.add(c, b.random_constant(name + ".b", {out, 1, 1}, -0.2f, 0.2f), name + ".bias");
    return relu ? b.relu(c, name + ".relu") : c;
  };
  const NodeId c1 = conv(x, 8, 3, "c1", true);
  const NodeId c2 = conv(c1, 8, 8, "c2", true);
  const NodeId c3 = conv(c2, 8, 8, "c3", false);
  const NodeId sum = b.relu(b.add(c3, c1, "residual"), "residual.relu");
  const NodeId pooled = b.flatten(b.global_avg_pool2d(sum, "NCHW", "pool"), 1, "flat");
  const NodeId logits = b.dense(pooled, b.random_constant("fc.w", {10, 8}, -0.5f, 0.5f), "fc");
  return b.finish({logits});
}

std::vector<std::vector<runtime::NDArray>> samples(const Graph& g, int n) {
  std::vector<std::vector<runtime::NDArray>> s;
  for (int i = 0; i < n; ++i) {
    s.emplace_back();
    s.back().emplace_back(g.node(g.input_ids()[0]).type.shape);
    s.back().back().fill_random(100 + i);
  }
  return s;
}

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += op_name(node.op) == op;
  return n;
}

TEST(QuantizeNetwork, ConvolutionsBecomeInt8AndPassInt8StraightOn) {
  const Graph model = optimize(small_cnn(), PassOptions{.block = 0, .winograd = false});
  QuantizeReport report;
  const Graph q = quantize_network(model, samples(model, 4), {}, &report);
  EXPECT_EQ(report.convolutions, 3);
  EXPECT_EQ(report.quantized, 2);  // the first kept float
  EXPECT_EQ(count(q, "qlinear_conv2d"), 2);
  EXPECT_EQ(count(q, "conv2d"), 1);
  // c2 reads c1's float output quantized once; c3 reads c2's int8 output itself.
  for (const Node& n : q.nodes()) {
    if (op_name(n.op) != "qlinear_conv2d") continue;
    const Node& x = q.node(n.inputs[0]);
    if (n.name == "c3.bias.int8") EXPECT_EQ(op_name(x.op), "qlinear_conv2d") << x.name;
    if (n.name == "c2.relu.int8") EXPECT_EQ(op_name(x.op), "quantize") << x.name;
    EXPECT_EQ(q.node(n.inputs[1]).type.dtype, DataType::kInt8);
    EXPECT_EQ(q.node(n.inputs[3]).type.dtype, DataType::kInt32);
  }
  // The residual add (and its ReLU) is a qlinear_add of c3's int8 output and
  // c1's value quantized once (what c2 reads too); only its sum is
  // dequantized, for the float pool.
  EXPECT_EQ(count(q, "quantize"), 1);
  EXPECT_EQ(count(q, "dequantize"), 1);
  ASSERT_EQ(count(q, "qlinear_add"), 1);
  for (const Node& n : q.nodes()) {
    if (op_name(n.op) != "qlinear_add") continue;
    EXPECT_EQ(q.node(n.inputs[0]).name, "c3.bias.int8");  // the chain ends at c3's bias
    EXPECT_EQ(op_name(q.node(n.inputs[1]).op), "quantize");
    EXPECT_TRUE(n.attrs_as<ops::QLinearAddAttrs>().relu);
  }

  // Quantization moves the logits by a few percent of their scale, not more.
  const auto inputs = samples(model, 1);
  const std::vector<runtime::NDArray> want = interpret(model, inputs[0]), got = interpret(q, inputs[0]);
  const measure::OutputComparison c = measure::compare_output(got[0], want[0], 0.05);
  EXPECT_TRUE(c.ok) << c.describe();
  EXPECT_GT(c.max_rel_error, 0.0);  // and it did quantize
}

TEST(QuantizeNetwork, WeightsPerChannelAndAGlobalScaleForEveryActivation) {
  const Graph model = optimize(small_cnn(), PassOptions{.block = 0, .winograd = false});
  QuantizeOptions o;
  o.skip_layers = {};
  o.global_scale = 8.0;
  const Graph q = quantize_network(model, {}, o);  // no samples needed
  EXPECT_EQ(count(q, "qlinear_conv2d"), 3);
  for (const Node& n : q.nodes()) {
    if (op_name(n.op) != "qlinear_conv2d") continue;
    const auto& a = n.attrs_as<ops::QLinearConv2dAttrs>();
    EXPECT_FLOAT_EQ(a.x_scale, 8.0f / 127);
    // int8's grid with zero point 0, stored unsigned for the byte dot product.
    EXPECT_EQ(a.x_dtype, "uint8");
    EXPECT_EQ(a.x_zero_point, 128);
    // The scale of each output channel is its largest weight over 127.
    const runtime::NDArray& w = *q.node(n.inputs[1]).value;
    const runtime::NDArray& s = *q.node(n.inputs[2]).value;
    const int64_t per = w.size() / w.shape()[0];
    for (int64_t f = 0; f < w.shape()[0]; ++f) {
      float largest = 0;
      for (int64_t i = 0; i < per; ++i) largest = std::max(largest, std::fabs(w.data()[f * per + i]));
      EXPECT_EQ(largest, 127.0f) << n.name << " channel " << f;  // the largest quantizes to 127
      EXPECT_GT(s.data()[f], 0.0f);
    }
  }
  EXPECT_THROW(quantize_network(model, {}, QuantizeOptions{}), Error);  // calibration without samples

  // 7-bit weights, for a target whose byte dot product saturates pairs.
  o.weight_max = 63;
  const Graph q7 = quantize_network(model, {}, o);
  int checked = 0;
  for (const Node& n : q7.nodes()) {
    if (op_name(n.op) != "qlinear_conv2d") continue;
    const runtime::NDArray& w = *q7.node(n.inputs[1]).value;
    const int64_t per = w.size() / w.shape()[0];
    for (int64_t f = 0; f < w.shape()[0]; ++f) {
      float largest = 0;
      for (int64_t i = 0; i < per; ++i) largest = std::max(largest, std::fabs(w.data()[f * per + i]));
      EXPECT_EQ(largest, 63.0f) << n.name << " channel " << f;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

// Seed 003's quantization for VTA: activations int8 at 8 / 128 = 2^-4 with
// zero point 0, one power-of-two scale per weight tensor (the smallest that
// holds its largest weight in 127), and every convolution requantizing by a
// shift; the residual add's operands share the output's scale, so it adds.
TEST(QuantizeNetwork, PowerOfTwoScalesForAnAcceleratorThatOnlyShifts) {
  const Graph model = optimize(small_cnn(), PassOptions{.block = 0, .winograd = false});
  QuantizeOptions o;
  o.skip_layers = {};
  o.global_scale = 8.0;
  o.power_of_two = true;
  const Graph q = quantize_network(model, {}, o);
  int checked = 0;
  for (const Node& n : q.nodes()) {
    if (op_name(n.op) == "qlinear_add") {
      const auto& a = n.attrs_as<ops::QLinearAddAttrs>();
      EXPECT_EQ(a.a.scale, 0.0625f);
      EXPECT_EQ(a.y.scale, 0.0625f);
      EXPECT_EQ(a.y.dtype, "int8");
    }
    if (op_name(n.op) != "qlinear_conv2d") continue;
    const auto& a = n.attrs_as<ops::QLinearConv2dAttrs>();
    EXPECT_TRUE(a.power_of_two);
    EXPECT_EQ(a.x_scale, 0.0625f);
    EXPECT_EQ(a.x_dtype, "int8");
    EXPECT_EQ(a.x_zero_point, 0);
    EXPECT_EQ(a.y_scale, 0.0625f);
    const runtime::NDArray& w = *q.node(n.inputs[1]).value;
    const runtime::NDArray& s = *q.node(n.inputs[2]).value;
    float largest = 0;
    for (int64_t i = 0; i < w.size(); ++i) largest = std::max(largest, std::fabs(w.data()[i]));
    EXPECT_LE(largest, 127.0f);
    EXPECT_GT(largest, 63.0f) << n.name;  // the power of two at or above max |w| / 127: at most twice too coarse
    int exponent = 0;
    for (int64_t f = 0; f < s.size(); ++f) {
      EXPECT_EQ(s.data()[f], s.data()[0]) << n.name << " channel " << f;
      EXPECT_EQ(std::frexp(s.data()[f], &exponent), 0.5f) << n.name;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 3);
  // The interpreted network stays near the float one (scales twice as coarse as calibrated ones at worst).
  const std::vector<std::vector<runtime::NDArray>> in = samples(model, 1);
  const std::vector<runtime::NDArray> want_all = interpret(model, in[0]), got_all = interpret(q, in[0]);
  const runtime::NDArray &want = want_all[0], &got = got_all[0];
  double err = 0, norm = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    err = std::max<double>(err, std::fabs(got.data()[i] - want.data()[i]));
    norm = std::max<double>(norm, std::fabs(want.data()[i]));
  }
  EXPECT_LT(err, 0.15 * norm);
  o.global_scale = 6.0;  // 6 / 128 is no power of two
  EXPECT_THROW(quantize_network(model, {}, o), Error);
}

TEST(QuantizeNetwork, ActivationRangesMapToUint8WithAZeroPoint) {
  const ops::QuantizeAttrs relu = activation_quantization({0.0f, 5.1f});
  EXPECT_EQ(relu.dtype, "uint8");
  EXPECT_EQ(relu.zero_point, 0);
  EXPECT_FLOAT_EQ(relu.scale, 5.1f / 255);
  const ops::QuantizeAttrs both = activation_quantization({-1.0f, 3.0f});
  EXPECT_EQ(both.zero_point, 64);  // -(-1) / (4 / 255) = 63.75
  EXPECT_FLOAT_EQ(both.scale, 4.0f / 255);
  EXPECT_EQ(activation_quantization({0.0f, 0.0f}).scale, 1.0f);
}

// MobileNet's pattern: a depthwise convolution and ReLU6s. The depthwise one
// is quantized too (per channel), each ReLU6 is the saturation of the
// qlinear_conv2d before it (no clip left in float), and the quantized graph
// stays within a few percent of the float one.
TEST(QuantizeNetwork, DepthwiseConvolutionsAndReluSixesQuantize) {
  GraphBuilder b;
  const NodeId x = b.input("x", {1, 8, 12, 12});
  NodeId v = b.conv2d(x, b.random_constant("c0.w", {16, 8, 1, 1}, -0.3f, 0.3f), ops::Conv2dAttrs::symmetric(1, 0), "c0");
  v = b.clip(b.add(v, b.random_constant("c0.b", {16, 1, 1}, -0.1f, 0.1f), "c0.bias"), 0.0f, 6.0f, "c0.relu6");
  v = b.conv2d(v, b.random_constant("dw.w", {16, 1, 3, 3}, -0.5f, 0.5f), ops::Conv2dAttrs::symmetric(1, 1, 1, 16), "dw");
  v = b.clip(b.add(v, b.random_constant("dw.b", {16, 1, 1}, -0.1f, 0.1f), "dw.bias"), 0.0f, 6.0f, "dw.relu6");
  v = b.conv2d(v, b.random_constant("c1.w", {8, 16, 1, 1}, -0.3f, 0.3f), ops::Conv2dAttrs::symmetric(1, 0), "c1");
  const Graph model = optimize(b.finish({v}), PassOptions{.block = 0, .winograd = false});
  QuantizeOptions o;
  o.skip_layers = {};
  const Graph q = quantize_network(model, samples(model, 4), o);
  EXPECT_EQ(count(q, "qlinear_conv2d"), 3);
  EXPECT_EQ(count(q, "clip"), 0);
  int depthwise = 0, relu6 = 0;
  for (const Node& n : q.nodes()) {
    if (op_name(n.op) != "qlinear_conv2d") continue;
    const auto& a = n.attrs_as<ops::QLinearConv2dAttrs>();
    depthwise += a.conv.groups == 16;
    relu6 += a.relu && a.clip_max == 6.0f;
  }
  EXPECT_EQ(depthwise, 1);
  EXPECT_EQ(relu6, 2);  // c0 and dw; c1 has none
  const auto inputs = samples(model, 1);
  const std::vector<runtime::NDArray> want = interpret(model, inputs[0]), got = interpret(q, inputs[0]);
  const measure::OutputComparison c = measure::compare_output(got[0], want[0], 0.05);
  EXPECT_TRUE(c.ok) << c.describe();
}

}  // namespace
}  // namespace tessera::graph
