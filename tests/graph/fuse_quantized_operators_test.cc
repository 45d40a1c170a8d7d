// fuse_quantized_operators on graphs in onnxruntime's QDQ form, built here
// as its importer builds them (quantize / dequantize around float operators,
// weights and biases as dequantize_per_channel of their integers): the
// patterns with int8 kernels become those kernels, with the model's own
// integers and scales, and the fused graph interpreted gives the QDQ graph's
// values (the float operators between the pairs, as the model defines them)
// to within one quantization step where a float sum lands near a rounding
// boundary. What the kernels cannot take stays as it was.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "graph/builder.h"
#include "graph/interpreter.h"
#include "graph/passes.h"
#include "ops/conv2d.h"
#include "ops/pooling.h"
#include "ops/qlinear_add.h"
#include "ops/qlinear_batch_matmul.h"
#include "ops/qlinear_conv2d.h"
#include "ops/quantize.h"
#include "compile/build.h"
#include "runtime/graph_executor.h"
#include "target/target.h"

namespace tessera::graph {
namespace {

class QdqBuilder {
 public:
  NodeId quantize(NodeId x, const ops::QuantizeAttrs& a, const std::string& name) {
    return b.add_node(Op::named("quantize"), name, {x}, a);
  }
  NodeId dequantize(NodeId q, const ops::QuantizeAttrs& a, const std::string& name) {
    return b.add_node(Op::named("dequantize"), name, {q}, a);
  }
  // Integers of a seeded sequence in [lo, hi], stored as `dtype`.
  NodeId integers(const std::string& name, const Shape& shape, int lo, int hi, DataType dtype) {
    runtime::NDArray v(shape);
    for (int64_t i = 0; i < v.size(); ++i) {
      seed_ = seed_ * 6364136223846793005ULL + 1442695040888963407ULL;
      v[i] = static_cast<float>(lo + static_cast<int>((seed_ >> 33) % static_cast<uint64_t>(hi - lo + 1)));
    }
    return b.constant(name, std::move(v), dtype);
  }
  NodeId per_channel(NodeId q, const std::vector<float>& scales, float zero_point, const std::string& name) {
    runtime::NDArray s({static_cast<int64_t>(scales.size())}), z({static_cast<int64_t>(scales.size())});
    for (size_t c = 0; c < scales.size(); ++c)
      s[static_cast<int64_t>(c)] = scales[c], z[static_cast<int64_t>(c)] = zero_point;
    return b.add_node(Op::named("dequantize_per_channel"), name,
                      {q, b.constant(name + ".scale", std::move(s)), b.constant(name + ".zero_point", std::move(z))},
                      ops::DequantizePerChannelAttrs{0});
  }
  // conv2d(dequantize(x), weight) + bias as onnxruntime quantizes them: an
  // int8 weight per output channel, an int32 bias in units x_scale * w_scale.
  NodeId conv(NodeId x, const ops::QuantizeAttrs& xq, int64_t in, int64_t out, int64_t k, const std::string& name,
              float weight_zero_point = 0) {
    std::vector<float> w_scales, b_scales;
    for (int64_t f = 0; f < out; ++f) {
      w_scales.push_back(0.004f + 0.001f * static_cast<float>(f % 5));
      b_scales.push_back(xq.scale * w_scales.back());
    }
    const NodeId w = per_channel(integers(name + ".w", {out, in, k, k}, -127, 127, DataType::kInt8), w_scales,
                                 weight_zero_point, name + ".weight");
    const NodeId bias =
        per_channel(integers(name + ".b", {out}, -3000, 3000, DataType::kInt32), b_scales, 0, name + ".bias");
    const NodeId c = b.conv2d(dequantize(x, xq, name + ".x"), w, ops::Conv2dAttrs::symmetric(1, k / 2), name);
    return b.bias_add(c, bias, 1, name + ".bias_add");
  }

  GraphBuilder b;

 private:
  uint64_t seed_ = 7;
};

const ops::QuantizeAttrs kInput{0.02f, 10, "uint8"}, kC1{0.05f, 0, "uint8"}, kC2{0.08f, 120, "uint8"},
    kSum{0.06f, 0, "uint8"};

// The same real values in int8: q - 128, zero point - 128.
ops::QuantizeAttrs as_signed(const ops::QuantizeAttrs& a) { return {a.scale, a.zero_point - 128, "int8"}; }

// input -> conv 3x3 + ReLU -> conv 1x1; ReLU(c1 + c2) -> max pool, each
// value quantized (to int8 with signed_activations).
Graph qdq_network(float weight_zero_point = 0, bool signed_activations = false) {
  const auto q_of = [&](const ops::QuantizeAttrs& a) { return signed_activations ? as_signed(a) : a; };
  const ops::QuantizeAttrs in = q_of(kInput), c1q = q_of(kC1), c2q = q_of(kC2), sumq = q_of(kSum);
  QdqBuilder q;
  const NodeId x = q.quantize(q.b.input("x", {1, 8, 10, 10}), in, "x.q");
  const NodeId c1 = q.quantize(q.b.relu(q.conv(x, in, 8, 16, 3, "c1", weight_zero_point), "c1.relu"), c1q, "c1.q");
  const NodeId c2 = q.quantize(q.conv(c1, c1q, 16, 16, 1, "c2"), c2q, "c2.q");
  const NodeId sum = q.quantize(
      q.b.relu(q.b.add(q.dequantize(c1, c1q, "a"), q.dequantize(c2, c2q, "b"), "sum"), "sum.relu"), sumq, "sum.q");
  const NodeId pooled = q.quantize(
      q.b.max_pool2d(q.dequantize(sum, sumq, "p"), ops::Pool2dAttrs::symmetric(2, 2), "pool"), sumq, "pool.q");
  return q.b.finish({q.dequantize(pooled, sumq, "out"), q.dequantize(c1, c1q, "c1.out")});
}

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += op_name(node.op) == op;
  return n;
}

TEST(FuseQuantizedOperators, QdqPatternsBecomeInt8KernelsWithTheModelsIntegers) {
  const Graph model = qdq_network();
  const Graph fused = fuse_quantized_operators(model);
  EXPECT_EQ(count(fused, "qlinear_conv2d"), 2);
  EXPECT_EQ(count(fused, "qlinear_add"), 1);
  EXPECT_EQ(count(fused, "conv2d"), 0);
  EXPECT_EQ(count(fused, "add"), 0);
  EXPECT_EQ(count(fused, "quantize"), 1);    // the input's
  EXPECT_EQ(count(fused, "dequantize"), 2);  // the outputs'

  for (const Node& n : fused.nodes()) {
    if (n.op == Op::kMaxPool2d) EXPECT_EQ(n.type.dtype, DataType::kUInt8);  // pools the stored bytes
    if (op_name(n.op) != "qlinear_conv2d") continue;
    const auto& a = n.attrs_as<ops::QLinearConv2dAttrs>();
    const bool first = n.name.rfind("c1", 0) == 0;
    EXPECT_EQ(a.relu, first) << n.name;
    EXPECT_EQ(a.x_scale, first ? kInput.scale : kC1.scale);
    EXPECT_EQ(a.y_zero_point, first ? kC1.zero_point : kC2.zero_point);
    // The weight's integers as the model stores them; the bias's integers
    // recovered exactly from their dequantized values.
    const Node& w = fused.node(n.inputs[1]);
    const Node& bias = fused.node(n.inputs[3]);
    EXPECT_EQ(w.type.dtype, DataType::kInt8);
    const Node* model_w = nullptr;
    const Node* model_b = nullptr;
    for (const Node& m : model.nodes()) {
      if (m.name == (first ? "c1.w" : "c2.w")) model_w = &m;
      if (m.name == (first ? "c1.b" : "c2.b")) model_b = &m;
    }
    ASSERT_TRUE(model_w && model_b);
    for (int64_t i = 0; i < w.value->size(); ++i) ASSERT_EQ((*w.value)[i], (*model_w->value)[i]) << n.name << " " << i;
    for (int64_t i = 0; i < bias.value->size(); ++i)
      ASSERT_EQ((*bias.value)[i], (*model_b->value)[i]) << n.name << " " << i;
  }

  std::vector<runtime::NDArray> inputs;
  inputs.emplace_back(Shape{1, 8, 10, 10});
  inputs[0].fill_random(3, -2.5f, 2.5f);  // beyond the input's range too: saturation
  const std::vector<runtime::NDArray> want_all = interpret(model, inputs), got_all = interpret(fused, inputs);
  // The first convolution's output (one rounding after exact integer sums
  // against the float sum's): within one step; the network's output after
  // three more roundings in a chain: within two.
  for (const auto& [index, steps, scale] : {std::tuple{1, 1.0f, kC1.scale}, std::tuple{0, 2.0f, kSum.scale}}) {
    const runtime::NDArray &want = want_all[index], &got = got_all[index];
    ASSERT_EQ(want.shape(), got.shape());
    int64_t equal = 0;
    for (int64_t i = 0; i < want.size(); ++i) {
      EXPECT_LE(std::fabs(got[i] - want[i]), steps * scale * 1.001f) << "output " << index << " element " << i;
      equal += got[i] == want[i];
    }
    EXPECT_GE(equal, want.size() * 95 / 100) << "output " << index;
  }
}

// onnxruntime's default S8S8: the same network with int8 activations fuses
// into the same kernels over unsigned bytes (q + 128, zero point + 128), and
// gives the unsigned network's values exactly.
TEST(FuseQuantizedOperators, SignedActivationsAreReadAsUnsignedBytes) {
  const Graph model = qdq_network(0, true);
  const Graph fused = fuse_quantized_operators(model);
  EXPECT_EQ(count(fused, "qlinear_conv2d"), 2);
  EXPECT_EQ(count(fused, "qlinear_add"), 1);
  for (const Node& n : fused.nodes()) {
    if (op_name(n.op) != "qlinear_conv2d") continue;
    const auto& a = n.attrs_as<ops::QLinearConv2dAttrs>();
    EXPECT_EQ(a.x_dtype, "uint8");
    EXPECT_EQ(a.y_dtype, "uint8");
    EXPECT_EQ(a.x_zero_point, n.name.rfind("c1", 0) == 0 ? kInput.zero_point : kC1.zero_point);
  }
  std::vector<runtime::NDArray> inputs;
  inputs.emplace_back(Shape{1, 8, 10, 10});
  inputs[0].fill_random(4, -2.5f, 2.5f);
  const std::vector<runtime::NDArray> got = interpret(fused, inputs),
                                      unsigned_values = interpret(fuse_quantized_operators(qdq_network()), inputs);
  for (size_t o = 0; o < got.size(); ++o)
    for (int64_t i = 0; i < got[o].size(); ++i) ASSERT_EQ(got[o][i], unsigned_values[o][i]) << o << " " << i;
}

TEST(FuseQuantizedOperators, WhatTheKernelsCannotTakeStaysFloat) {
  // A weight with a zero point: the convolution stays float, its neighbours fuse.
  const Graph fused = fuse_quantized_operators(qdq_network(3.0f));
  EXPECT_EQ(count(fused, "conv2d"), 1);
  EXPECT_EQ(count(fused, "qlinear_conv2d"), 1);
  EXPECT_EQ(count(fused, "dequantize_per_channel"), 2);  // its weight and bias, for fold_constants

  // A dequantize quantized back in another scale is a float requantization.
  QdqBuilder q;
  const NodeId x = q.quantize(q.b.input("x", {4, 4}), kInput, "x.q");
  const NodeId same = q.quantize(q.dequantize(x, kInput, "dq1"), kInput, "same");
  const NodeId other = q.quantize(q.dequantize(same, kInput, "dq2"), kC1, "other");
  const Graph g = fuse_quantized_operators(q.b.finish({q.dequantize(other, kC1, "out")}));
  EXPECT_EQ(count(g, "quantize"), 2);  // the input's and `other`; `same` was the identity
  EXPECT_EQ(count(g, "dequantize"), 2);
}

// Attention's product of two run-time tensors as the importer builds an
// ONNX MatMul in QDQ: a (2, 8, 16) and b (2, 16, 12) dequantized, b's last
// two axes swapped, reshaped, batch_matmul, reshaped, [relu], quantized (b's
// bytes transposed by the model, the importer's moves on a). It
// becomes qlinear_batch_matmul over the stored bytes (b signed with a zero
// point); interpreted, within one step of the float product (the model's
// own arithmetic); compiled, the integer reference's values exactly, by the
// byte dot product where the host's does not saturate, and widened.
// With relu, b is unsigned (zero point 130) and transposed after its
// dequantize, as the importer does; without, signed.
Graph qdq_product(bool relu) {
  const ops::QuantizeAttrs aq{0.03f, 10, "uint8"}, bq{0.02f, relu ? 130 : -3, relu ? "uint8" : "int8"},
      yq{0.04f, 100, "uint8"};
  QdqBuilder q;
  GraphBuilder& b = q.b;
  const NodeId a = q.dequantize(q.quantize(b.input("a", {2, 8, 16}), aq, "a.q"), aq, "a.dq");
  const NodeId a3 = b.reshape(a, {2, 8, 16}, "mm.a3");
  NodeId b3;
  if (relu) {
    const NodeId w = q.dequantize(q.quantize(b.input("b", {2, 16, 12}), bq, "b.q"), bq, "b.dq");
    b3 = b.reshape(b.transpose(w, {0, 2, 1}, "mm.bT"), {2, 12, 16}, "mm.b3");
  } else {
    // b's bytes transposed before their dequantize (a reader other than a
    // dequantize: they stay int8, activations_as_unsigned).
    const NodeId b_bytes = b.transpose(q.quantize(b.input("b", {2, 16, 12}), bq, "b.q"), {0, 2, 1}, "b.qT");
    b3 = b.reshape(q.dequantize(b_bytes, bq, "b.dq"), {2, 12, 16}, "mm.b3");
  }
  NodeId y = b.reshape(b.batch_matmul(a3, b3, "mm.bmm"), {2, 8, 12}, "mm");
  if (relu) y = b.relu(y, "mm.relu");
  return b.finish({q.dequantize(q.quantize(y, yq, "y.q"), yq, "y")});
}

TEST(FuseQuantizedOperators, AProductOfTwoQuantizedTensorsIsOneInt8Kernel) {
  for (bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "relu" : "no relu");
    const Graph model = qdq_product(relu);
    const Graph fused = fuse_quantized_operators(model);
    EXPECT_EQ(count(fused, "qlinear_batch_matmul"), 1);
    EXPECT_EQ(count(fused, "batch_matmul"), 0);
    EXPECT_EQ(count(fused, "relu"), 0);
    for (const Node& n : fused.nodes()) {
      if (op_name(n.op) == "reshape") EXPECT_NE(n.type.dtype, DataType::kFloat32);  // bytes moved
      if (op_name(n.op) != "qlinear_batch_matmul") continue;
      const auto& a = n.attrs_as<ops::QLinearBatchMatmulAttrs>();
      EXPECT_EQ(a.a.zero_point, 10);
      EXPECT_EQ(a.b.zero_point, relu ? 130 : -3);
      EXPECT_EQ(a.b.dtype, relu ? "uint8" : "int8");
      EXPECT_EQ(a.output.relu, relu);
    }
    std::vector<runtime::NDArray> inputs;
    inputs.emplace_back(Shape{2, 8, 16});
    inputs.emplace_back(Shape{2, 16, 12});
    inputs[0].fill_random(5, -0.5f, 8.0f);
    inputs[1].fill_random(6, -2.5f, 2.5f);
    const std::vector<runtime::NDArray> float_values = interpret(model, inputs), integer_values = interpret(fused, inputs);
    const runtime::NDArray &want = float_values[0], &exact = integer_values[0];
    int64_t equal = 0;
    for (int64_t i = 0; i < want.size(); ++i) {
      EXPECT_LE(std::fabs(exact[i] - want[i]), 0.04f * 1.001f) << i;
      equal += exact[i] == want[i];
    }
    EXPECT_GE(equal, want.size() * 95 / 100);

    // By the byte dot product where the target's does not saturate pairs
    // (graph::convert_layout marks it), else widened (haswell): both exact.
    for (const target::Target& target : {target::Target::host(), target::Target::parse("llvm -mcpu=haswell")}) {
      if (!target.missing_on(target::Target::host()).empty()) continue;
      SCOPED_TRACE(target.str());
      build::BuildResult built = build::build(model, target);
      int byte_dot = 0;
      for (const Node& n : built.optimized.nodes())
        if (op_name(n.op) == "qlinear_batch_matmul") byte_dot += n.attrs_as<ops::QLinearBatchMatmulAttrs>().byte_dot;
      EXPECT_EQ(byte_dot, build::int8_weight_limit(target) == 127 ? 1 : 0);
      runtime::GraphExecutor ex(std::move(built.artifact), "product");
      ex.set_input(0, inputs[0]);
      ex.set_input(1, inputs[1]);
      ex.run();
      const runtime::NDArray got = ex.get_output(0);
      for (int64_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], exact[i]) << i;
    }
  }
}

TEST(FuseQuantizedOperators, FloatModelsAreUntouched) {
  GraphBuilder b;
  const NodeId x = b.input("x", {1, 4, 8, 8});
  const NodeId c =
      b.relu(b.conv2d(x, b.random_constant("w", {4, 4, 3, 3}, -1, 1), ops::Conv2dAttrs::symmetric(1, 1), "c"), "r");
  const Graph g = b.finish({c});
  const Graph fused = fuse_quantized_operators(g);
  ASSERT_EQ(fused.size(), g.size());
  for (NodeId i = 0; i < static_cast<NodeId>(g.size()); ++i) EXPECT_EQ(fused.node(i).op, g.node(i).op);
}

}  // namespace
}  // namespace tessera::graph
