// Each graph pass alone: what it changes in the graph, and that the
// interpreter computes the same outputs before and after it.
#include "graph/passes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "graph/builder.h"
#include "graph/fuse.h"
#include "graph/interpreter.h"
#include "graph/zoo.h"
#include "ops/attention.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "ops/transform.h"
#include "ops/unary_math.h"
#include "graph_test_util.h"
#include "tessera/error.h"

namespace tessera::graph {
namespace {

using test::max_relative_error;
using test::random_array;

int count(const Graph& g, Op op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

// Both graphs on the same seeded inputs agree within 1e-5 of the largest output.
void expect_same_outputs(const Graph& before, const Graph& after, uint64_t seed = 5) {
  std::vector<runtime::NDArray> inputs;
  for (NodeId id : before.input_ids()) inputs.push_back(random_array(before.node(id).type.shape, seed++));
  auto want = interpret(before, inputs);
  auto got = interpret(after, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape());
    EXPECT_LE(max_relative_error(test::values(got[i]), test::values(want[i])), 1e-5) << "output " << i;
  }
}

// data -> conv 3x3 (+ bias) -> batch_norm -> relu -> dropout, in `layout`.
Graph conv_bn_relu(const std::string& layout, bool bias) {
  GraphBuilder b(3);
  const bool nchw = layout == "NCHW";
  NodeId x = b.input("data", nchw ? Shape{1, 8, 9, 9} : Shape{1, 9, 9, 8});
  NodeId w = b.random_constant("conv.weight", nchw ? Shape{16, 8, 3, 3} : Shape{3, 3, 8, 16}, -0.3f, 0.3f);
  Conv2dAttrs a = Conv2dAttrs::symmetric(1, 1);
  a.data_layout = layout;
  a.kernel_layout = nchw ? "OIHW" : "HWIO";
  NodeId y = b.conv2d(x, w, a, "conv");
  if (bias) y = b.bias_add(y, b.random_constant("conv.bias", {16}, -1, 1), nchw ? 1 : 3, "conv.bias_add");
  NodeId gamma = b.random_constant("bn.weight", {16}, 0.5f, 1.5f), beta = b.random_constant("bn.bias", {16}, -1, 1);
  NodeId mean = b.random_constant("bn.running_mean", {16}, -1, 1);
  NodeId var = b.random_constant("bn.running_var", {16}, 0.5f, 2);
  BatchNormAttrs bn;
  bn.axis = nchw ? 1 : 3;
  y = b.batch_norm(y, gamma, beta, mean, var, bn, "bn");
  y = b.relu(y, "relu");
  y = b.dropout(y, 0.5, "dropout");
  return b.finish({y});
}

TEST(GraphPasses, SimplifyInferenceDropsDropoutAndSplitsBatchNorm) {
  Graph g = conv_bn_relu("NCHW", true);
  Graph s = simplify_inference(g);
  EXPECT_EQ(count(s, Op::kDropout), 0);
  EXPECT_EQ(count(s, Op::kBatchNorm), 0);
  EXPECT_EQ(count(s, Op::kBiasAdd), 0) << "a constant bias becomes a broadcasting add";
  EXPECT_EQ(count(s, Op::kMultiply), 1);
  EXPECT_EQ(count(s, Op::kAdd), 2);
  expect_same_outputs(g, s);
}

TEST(GraphPasses, FoldBatchNormScalesTheWeightsInBothLayouts) {
  for (const std::string layout : {"NCHW", "NHWC"}) {
    Graph g = conv_bn_relu(layout, false);
    Graph f = fold_batch_norm(simplify_inference(g));
    EXPECT_EQ(count(f, Op::kMultiply), 0) << layout;
    EXPECT_EQ(count(f, Op::kConv2d), 1) << layout << ": the unfolded conv is gone";
    EXPECT_EQ(count(f, Op::kAdd), 1) << layout << ": the shift stays as the conv's bias";
    expect_same_outputs(g, f);
  }
}

TEST(GraphPasses, FoldConstantsEvaluatesWhatDependsOnConstantsOnly) {
  GraphBuilder b;
  NodeId x = b.input("x", {2, 4});
  NodeId c1 = b.random_constant("c1", {2, 4}, -1, 1), c2 = b.random_constant("c2", {2, 4}, -1, 1);
  NodeId folded = b.relu(b.add(c1, c2, "sum"), "relu_of_constants");
  Graph g = b.finish({b.multiply(x, folded, "out")});
  Graph f = fold_constants(g);
  EXPECT_EQ(count(f, Op::kAdd), 0);
  EXPECT_EQ(count(f, Op::kRelu), 0);
  EXPECT_EQ(f.node(*f.find("relu_of_constants")).op, Op::kConstant);
  expect_same_outputs(g, eliminate_dead_nodes(f));
}

// A constant of one element.
NodeId scalar(GraphBuilder& b, const std::string& name, float value) {
  runtime::NDArray a({1});
  a[0] = value;
  return b.constant(name, std::move(a));
}

// dense -> bias -> GELU written out as torch.onnx exports it at opset 17:
// x * (1 + erf(x * (1 / sqrt 2))) * 0.5 (`scale_first`: (x * 0.5) * (...)),
// with `half` in place of 0.5 (a near miss when not 0.5).
Graph gelu_formula_graph(bool scale_first, float half = 0.5f) {
  GraphBuilder b(9);
  NodeId x = b.input("x", {4, 32});
  NodeId h = b.dense(x, b.random_constant("w", {24, 32}, -0.4f, 0.4f), "fc");
  h = b.add(h, b.random_constant("bias", {24}, -0.5f, 0.5f), "fc.bias");
  NodeId e = b.add_node(Op::named("erf"), "erf", {b.multiply(h, scalar(b, "inv_root2", 0.70710678f), "scaled")});
  e = b.add(scalar(b, "one", 1.0f), e, "one_plus");  // the constant first: either order is the formula
  NodeId y = scale_first ? b.multiply(b.multiply(h, scalar(b, "half", half), "half_x"), e, "gelu")
                         : b.multiply(b.multiply(e, h, "x_times"), scalar(b, "half", half), "gelu");
  return b.finish({y});
}

TEST(GraphPasses, RecognizeGeluMakesTheErfFormulaOneNodeThatFusesIntoTheDense) {
  for (bool scale_first : {false, true}) {
    const Graph before = gelu_formula_graph(scale_first);
    const Graph after = eliminate_dead_nodes(recognize_gelu(before));
    EXPECT_EQ(count(after, Op::named("gelu")), 1) << scale_first;
    EXPECT_EQ(count(after, Op::named("erf")), 0) << scale_first;
    EXPECT_EQ(count(after, Op::kMultiply), 0) << scale_first;
    EXPECT_EQ(after.node(after.outputs()[0]).name, "gelu");  // the output keeps its name
    expect_same_outputs(before, after);
    // The whole network is one kernel: dense, bias and gelu.
    EXPECT_EQ(fuse_operators(optimize(before)).size(), 1u) << scale_first;
  }
  // 0.4 instead of 0.5 is another function: left as it is.
  const Graph near_miss = gelu_formula_graph(false, 0.4f);
  EXPECT_EQ(count(recognize_gelu(near_miss), Op::named("gelu")), 0);
}

// GPT-2's GELU as the importer builds it: 0.5 x (1 + tanh(sqrt(2/pi) (x +
// 0.044715 x^3))), x^3 as (x * x) * x; `cubic` another coefficient.
Graph tanh_gelu_formula_graph(float cubic = 0.044715f) {
  GraphBuilder b(13);
  NodeId x = b.input("x", {4, 32});
  NodeId h = b.dense(x, b.random_constant("w", {24, 32}, -0.4f, 0.4f), "fc");
  h = b.add(h, b.random_constant("bias", {24}, -0.5f, 0.5f), "fc.bias");
  NodeId cube = b.multiply(b.multiply(h, h, "square"), h, "cube");
  NodeId inner = b.add(h, b.multiply(scalar(b, "c", cubic), cube, "c_cube"), "x_plus");
  NodeId t = b.add_node(Op::named("tanh"), "tanh", {b.multiply(inner, scalar(b, "k", 0.7978845608f), "scaled")});
  NodeId e = b.add(t, scalar(b, "one", 1.0f), "one_plus");
  return b.finish({b.multiply(b.multiply(scalar(b, "half", 0.5f), h, "half_x"), e, "gelu")});
}

TEST(GraphPasses, RecognizeGeluMakesGpt2sTanhFormulaOneNodeThatFusesIntoTheDense) {
  const Graph before = tanh_gelu_formula_graph();
  const Graph after = eliminate_dead_nodes(recognize_gelu(before));
  ASSERT_EQ(count(after, Op::named("gelu")), 1);
  for (const Node& n : after.nodes())
    if (n.op == Op::named("gelu")) EXPECT_TRUE(n.attrs_as<ops::GeluAttrs>().tanh_approximation);
  EXPECT_EQ(count(after, Op::named("tanh")), 0);
  EXPECT_EQ(count(after, Op::kMultiply), 0);
  expect_same_outputs(before, after);
  EXPECT_EQ(fuse_operators(optimize(before)).size(), 1u);
  EXPECT_EQ(count(recognize_gelu(tanh_gelu_formula_graph(0.05f)), Op::named("gelu")), 0);
}

// A transformer's feed-forward step as the importer builds MatMul of a 3-D
// activation: reshape -> dense -> reshape, then bias (a row), GELU and the
// residual add (a same-shaped tensor), and a scale by a scalar after a
// transpose.
Graph tokens_feed_forward() {
  GraphBuilder b(11);
  NodeId x = b.input("x", {1, 4, 8});
  NodeId rows = b.reshape(x, {4, 8}, "rows");
  NodeId h = b.reshape(b.dense(rows, b.random_constant("w", {8, 8}, -0.4f, 0.4f), "fc"), {1, 4, 8}, "fc.tokens");
  h = b.add(h, b.random_constant("bias", {8}, -0.5f, 0.5f), "bias");
  h = b.add_node(Op::named("gelu"), "gelu", {h}, ops::GeluAttrs{});
  h = b.add(h, x, "residual");
  NodeId heads = b.transpose(b.reshape(h, {1, 4, 2, 4}, "split"), {0, 2, 1, 3}, "heads");
  NodeId y = b.multiply(heads, scalar(b, "scale", 0.5f), "scaled");
  return b.finish({y});
}

TEST(GraphPasses, ElementwiseAfterAReshapeMovesBeforeItAndFusesIntoTheDense) {
  const Graph before = tokens_feed_forward();
  const Graph after = move_elementwise_before_reshape(before);
  expect_same_outputs(before, after);
  // The bias, GELU, residual add and scale read no reshape or transpose now.
  for (const Node& n : after.nodes())
    if (n.op == Op::kAdd || n.op == Op::kMultiply || n.op == Op::named("gelu"))
      for (NodeId in : n.inputs)
        if (after.node(in).op == Op::kTranspose || (after.node(in).op == Op::kReshape && n.op != Op::kAdd))
          ADD_FAILURE() << n.describe() << " still reads " << after.node(in).describe();
  // One kernel computes dense, bias, GELU, residual and scale; the transpose another.
  const Graph optimized = optimize(before);
  bool one_kernel = false;
  std::string groups;
  for (const FusedGroup& group : fuse_operators(optimized)) {
    std::vector<std::string> ops;
    for (NodeId id : group.nodes) ops.push_back(op_name(optimized.node(id).op));
    for (const auto& o : ops) groups += o + " ";
    groups += "| ";
    one_kernel = one_kernel || ops == std::vector<std::string>{"dense", "add", "gelu", "add", "multiply"};
  }
  EXPECT_TRUE(one_kernel) << groups;
  expect_same_outputs(before, optimized);
  // A bias along another axis than the last stays after the reshape.
  GraphBuilder b(3);
  NodeId x = b.input("x", {4, 6});
  NodeId y = b.add(b.reshape(b.relu(x, "r"), {2, 2, 6}, "split"), b.random_constant("c", {2, 1, 1}, -1, 1), "per_row");
  const Graph other_axis = b.finish({y});
  EXPECT_EQ(move_elementwise_before_reshape(other_axis).node(
                move_elementwise_before_reshape(other_axis).outputs()[0]).op, Op::kAdd);
}

// Attention as the importer leaves a MatMul of 4-D heads: batch_matmul of
// (groups * heads) rows, the scores reshaped to (groups, heads, M, N),
// divided by sqrt(D), a padding mask (groups, 1, 1, N) added, softmax over
// the keys, and batch_matmul with the values transposed.
Graph attention_graph(bool read_scores_twice) {
  GraphBuilder b(12);
  const int64_t groups = 2, heads = 3, m = 5, n = 6, d = 4;
  NodeId q = b.input("q", {groups * heads, m, d}), k = b.input("k", {groups * heads, n, d});
  NodeId v = b.input("v", {groups, heads, n, d}), mask = b.input("mask", {groups, 1, 1, n});
  NodeId s = b.reshape(b.batch_matmul(q, k, "qk"), {groups, heads, m, n}, "scores");
  s = b.add_node(Op::named("divide"), "scaled", {s, scalar(b, "root_d", 2.0f)});
  s = b.add(s, mask, "masked");
  NodeId p = b.add_node(Op::named("softmax"), "p", {s}, ops::SoftmaxAttrs{-1});
  NodeId vt = b.reshape(b.transpose(v, {0, 1, 3, 2}, "vT"), {groups * heads, d, n}, "vT3");
  NodeId out = b.batch_matmul(b.reshape(p, {groups * heads, m, n}, "p3"), vt, "pv");
  return b.finish(read_scores_twice ? std::vector<NodeId>{out, p} : std::vector<NodeId>{out});
}

TEST(GraphPasses, RecognizeAttentionMakesProductsSoftmaxAndMaskOneNode) {
  const Graph before = attention_graph(false);
  const Graph after = eliminate_dead_nodes(recognize_attention(before));
  ASSERT_EQ(count(after, Op::named("attention")), 1);
  EXPECT_EQ(count(after, Op::named("softmax")), 0);
  EXPECT_EQ(count(after, Op::named("batch_matmul")), 0);
  EXPECT_EQ(count(after, Op::kTranspose), 0);  // the values' transpose undone, not redone
  const Node& att = after.node(after.outputs()[0]);
  const auto& a = att.attrs_as<ops::AttentionAttrs>();
  EXPECT_DOUBLE_EQ(a.scale, 0.5);
  EXPECT_EQ(a.heads, 3);
  EXPECT_TRUE(a.has_mask);
  expect_same_outputs(before, after);
  // Scores someone else reads stay as they are.
  EXPECT_EQ(count(recognize_attention(attention_graph(true)), Op::named("attention")), 0);
  // Scores of three axes (B, M, N) with a mask per row of B: B groups of one head.
  GraphBuilder b(13);
  NodeId q = b.input("q", {4, 3, 8}), k = b.input("k", {4, 5, 8}), v = b.input("v", {4, 5, 8});
  NodeId mask = b.input("mask", {4, 1, 5});
  NodeId p = b.add_node(Op::named("softmax"), "p", {b.add(b.batch_matmul(q, k, "qk"), mask, "masked")},
                        ops::SoftmaxAttrs{2});
  const Graph three_axes = b.finish({b.batch_matmul(p, b.transpose(v, {0, 2, 1}, "vT"), "pv")});
  const Graph fused = eliminate_dead_nodes(recognize_attention(three_axes));
  ASSERT_EQ(count(fused, Op::named("attention")), 1);
  EXPECT_EQ(fused.node(fused.outputs()[0]).attrs_as<ops::AttentionAttrs>().heads, 1);
  expect_same_outputs(three_axes, fused);
  // One query of one key (a sequence of one token): the mask of one element
  // moved before the reshape into heads, the add broadcasting the (B, 1, 1)
  // scores to (groups, heads, 1, 1) itself.
  GraphBuilder one(16);
  q = one.input("q", {2, 1, 8}), k = one.input("k", {2, 1, 8}), v = one.input("v", {2, 1, 8});
  const NodeId scores = one.add(one.batch_matmul(q, k, "qk"), one.input("mask", {1, 1, 1, 1}), "masked");
  p = one.add_node(Op::named("softmax"), "p", {scores}, ops::SoftmaxAttrs{-1});
  const Graph single =
      one.finish({one.batch_matmul(one.reshape(p, {2, 1, 1}, "p3"), one.transpose(v, {0, 2, 1}), "pv")});
  EXPECT_EQ(single.node(scores).type.shape, (Shape{1, 2, 1, 1}));
  const Graph single_fused = eliminate_dead_nodes(recognize_attention(single));
  ASSERT_EQ(count(single_fused, Op::named("attention")), 1);
  EXPECT_EQ(single_fused.node(single_fused.outputs()[0]).attrs_as<ops::AttentionAttrs>().heads, 2);
  expect_same_outputs(single, single_fused);
}

// A transformer layer's attention as exporters leave it: q, k and v each a
// dense layer's (tokens, heads x D) output, reshaped to (groups, sequence,
// heads, D) and transposed to heads first; the output transposed back and
// reshaped to (tokens, heads x D) (`back`), or read as (B, M, D).
Graph heads_attention_graph(bool back) {
  GraphBuilder b(14);
  const int64_t groups = 2, heads = 3, s = 5, d = 4;
  auto heads_first = [&](const std::string& name) {
    NodeId x = b.input(name, {groups * s, heads * d});
    return b.transpose(b.reshape(x, {groups, s, heads, d}, name + "4"), {0, 2, 1, 3}, name + "T");
  };
  NodeId q = b.reshape(heads_first("q"), {groups * heads, s, d}, "q3");
  NodeId k = b.reshape(heads_first("k"), {groups * heads, s, d}, "k3");
  NodeId vt = b.reshape(b.transpose(heads_first("v"), {0, 1, 3, 2}, "vT"), {groups * heads, d, s}, "vT3");
  NodeId scores = b.add_node(Op::named("divide"), "scaled", {b.batch_matmul(q, k, "qk"), scalar(b, "root_d", 2.0f)});
  NodeId p = b.add_node(Op::named("softmax"), "p", {scores}, ops::SoftmaxAttrs{-1});
  NodeId out = b.batch_matmul(p, vt, "pv");  // (groups * heads, s, d)
  if (back)
    out = b.reshape(b.transpose(b.reshape(out, {groups, heads, s, d}, "out4"), {0, 2, 1, 3}, "outT"),
                    {groups * s, heads * d}, "rows");
  return b.finish({out});
}

TEST(GraphPasses, AttentionReadsHeadsSequenceFirstWithoutTransposes) {
  for (bool back : {true, false}) {
    const Graph before = heads_attention_graph(back);
    const Graph recognized = eliminate_dead_nodes(recognize_attention(before));
    EXPECT_EQ(count(recognized, Op::kTranspose), back ? 4 : 3);  // q, k, v into heads, [the output back]
    const Graph after = eliminate_dead_nodes(attention_sequence_first(recognized));
    ASSERT_EQ(count(after, Op::named("attention")), 1);
    // None left when the output goes back to (tokens, heads x D); else the one that makes (B, M, D) of it.
    EXPECT_EQ(count(after, Op::kTranspose), back ? 0 : 1);
    for (const Node& n : after.nodes())
      if (n.op == Op::named("attention")) {
        EXPECT_TRUE(n.attrs_as<ops::AttentionAttrs>().sequence_first);
        EXPECT_EQ(n.type.shape, (Shape{2, 5, 3, 4}));
      }
    expect_same_outputs(before, after);
  }
  // Heads that are no transpose of a (groups, sequence, heads, D) tensor: as it was.
  const Graph plain = eliminate_dead_nodes(recognize_attention(attention_graph(false)));
  const Graph kept = attention_sequence_first(plain);
  for (const Node& n : kept.nodes())
    if (n.op == Op::named("attention")) EXPECT_FALSE(n.attrs_as<ops::AttentionAttrs>().sequence_first);
  EXPECT_EQ(kept.size(), plain.size());
}

// A sequence-first attention (what attention_sequence_first leaves of an
// export) whose q, k and v are dense layers of `x` (with biases, or none),
// each reading its own reshape of it as the importers write them, reshaped
// into heads; q and k scaled by D^-1/4 (q before its bias, k after) where
// `scaled`; its keys and values of `y` instead where `cross`; q's dense
// layer read by an output of its own too where `q_read_twice`; a padding
// mask as its fourth input.
struct ProjectedAttention {
  bool biases = true, scaled = false, cross = false, q_read_twice = false, v_bias = true;
};

Graph projected_attention(const ProjectedAttention& c) {
  GraphBuilder b(15);
  const int64_t groups = 2, heads = 3, s = 5, d = 4, width = heads * d;
  const NodeId x = b.input("x", {groups, s, width});
  const NodeId y = c.cross ? b.input("y", {groups, s, width}) : x;
  const NodeId mask = b.input("mask", {groups, 1, 1, s});
  std::vector<NodeId> outputs;
  auto projected = [&](NodeId from, const std::string& name, bool bias) {
    const NodeId rows = b.reshape(from, {groups * s, width}, name + ".rows");
    NodeId p = b.dense(rows, b.random_constant(name + ".w", {width, width}, -0.5f, 0.5f), name);
    auto scale = [&] { p = b.multiply(p, scalar(b, name + ".scale", 0.7071f), name + ".scaled"); };
    if (c.scaled && name == "q") scale();
    if (bias) p = b.add(b.random_constant(name + ".b", {width}, -0.2f, 0.2f), p, name + ".bias");
    if (c.scaled && name == "k") scale();
    if (name == "q" && c.q_read_twice) outputs.push_back(p);
    return b.reshape(p, {groups, s, heads, d}, name + ".heads");
  };
  ops::AttentionAttrs a{0.5, heads, true};
  a.sequence_first = true;
  const NodeId q = projected(x, "q", c.biases), k = projected(y, "k", c.biases), v = projected(y, "v", c.v_bias);
  outputs.insert(outputs.begin(), b.add_node(Op::named("attention"), "att", {q, k, v, mask}, a));
  return b.finish(outputs);
}

TEST(GraphPasses, SelfAttentionReadsOneDenseLayerOfTheThreeProjections) {
  for (const ProjectedAttention& c : {ProjectedAttention{}, ProjectedAttention{.scaled = true},
                                      ProjectedAttention{.biases = false, .scaled = true, .v_bias = false}}) {
    const Graph before = projected_attention(c);
    const Graph after = eliminate_dead_nodes(combine_qkv_projections(before));
    const std::string what = std::string(c.biases ? "biases" : "none") + (c.scaled ? ", scaled" : "");
    ASSERT_EQ(count(after, Op::kDense), 1) << what;
    EXPECT_EQ(count(after, Op::kAdd), c.biases ? 1 : 0) << what;
    EXPECT_EQ(count(after, Op::kMultiply), 0) << what;  // the scales in the weight and bias
    for (const Node& n : after.nodes()) {
      if (n.op == Op::kDense) EXPECT_EQ(after.node(n.inputs[1]).type.shape, (Shape{36, 12}));  // q's, k's, v's rows
      if (n.op != Op::named("attention")) continue;
      EXPECT_TRUE(n.attrs_as<ops::AttentionAttrs>().packed);
      ASSERT_EQ(n.inputs.size(), 4u);
      EXPECT_EQ(after.node(n.inputs[0]).type.shape, (Shape{2, 5, 3, 3, 4}));
      EXPECT_EQ(n.inputs[1], n.inputs[0]);
      EXPECT_EQ(n.inputs[2], n.inputs[0]);
      EXPECT_EQ(after.node(n.inputs[3]).name, "mask");
    }
    expect_same_outputs(before, after);
  }
  // Keys and values of other tokens, a projection read elsewhere too, or one
  // without the others' bias: the three dense layers as they were.
  for (const ProjectedAttention& c : {ProjectedAttention{.cross = true}, ProjectedAttention{.q_read_twice = true},
                                      ProjectedAttention{.v_bias = false}}) {
    const Graph before = projected_attention(c);
    const Graph after = eliminate_dead_nodes(combine_qkv_projections(before));
    EXPECT_EQ(count(after, Op::kDense), 3);
    for (const Node& n : after.nodes())
      if (n.op == Op::named("attention")) EXPECT_FALSE(n.attrs_as<ops::AttentionAttrs>().packed);
  }
}

TEST(GraphPasses, ComposeTransposesMergesAndDropsInversePairs) {
  GraphBuilder b(2);
  NodeId x = b.input("x", {2, 3, 4, 5});
  NodeId t1 = b.transpose(x, {0, 2, 3, 1}, "t1");      // (2, 4, 5, 3)
  NodeId back = b.transpose(t1, {0, 3, 1, 2}, "back");  // x again
  NodeId t2 = b.transpose(b.relu(back, "r"), {1, 0, 2, 3}, "t2");
  NodeId t3 = b.transpose(t2, {0, 1, 3, 2}, "t3");  // one transpose {1, 0, 3, 2}
  const Graph before = b.finish({t3});
  const Graph after = eliminate_dead_nodes(compose_transposes(before));
  EXPECT_EQ(count(after, Op::kTranspose), 1);
  const Node& out = after.node(after.outputs()[0]);
  ASSERT_EQ(out.op, Op::kTranspose);
  EXPECT_EQ(out.attrs_as<ops::TransposeAttrs>().perm, (std::vector<int64_t>{1, 0, 3, 2}));
  EXPECT_EQ(after.node(after.node(out.inputs[0]).inputs[0]).op, Op::kInput);  // relu reads x itself
  expect_same_outputs(before, after);
}

// A layer norm over the last two axes written out as old exporters did:
// mean, subtract, square, mean, add eps, sqrt, divide, scale, bias.
Graph decomposed_layer_norm(bool with_scale_and_bias) {
  GraphBuilder b(4);
  NodeId x = b.input("x", {2, 3, 4, 6});
  ops::ReduceAttrs mean;
  mean.axes = {-2, -1};
  NodeId m = b.add_node(Op::named("reduce_mean"), "mean", {x}, mean);
  NodeId d = b.add_node(Op::named("subtract"), "centred", {x, m});
  NodeId v = b.add_node(Op::named("reduce_mean"), "var", {b.multiply(d, d, "square")}, mean);
  NodeId s = b.add_node(Op::named("sqrt"), "std", {b.add(v, scalar(b, "eps", 1e-3f), "var_eps")});
  NodeId y = b.add_node(Op::named("divide"), "normalised", {d, s});
  if (with_scale_and_bias) {
    y = b.multiply(y, b.random_constant("gamma", {1, 4, 6}, 0.5f, 1.5f), "scaled");
    y = b.add(b.random_constant("beta", {4, 6}, -0.5f, 0.5f), y, "ln");
  }
  return b.finish({b.relu(y, "after")});
}

TEST(GraphPasses, RecognizeLayerNormMakesTheWrittenOutFormulaOneNode) {
  for (bool with_scale_and_bias : {true, false}) {
    const Graph before = decomposed_layer_norm(with_scale_and_bias);
    const Graph after = eliminate_dead_nodes(recognize_layer_norm(before));
    EXPECT_EQ(count(after, Op::named("layer_norm")), 1) << with_scale_and_bias;
    EXPECT_EQ(count(after, Op::named("reduce_mean")), 0) << with_scale_and_bias;
    EXPECT_EQ(count(after, Op::kMultiply) + count(after, Op::kAdd), 0) << with_scale_and_bias;
    expect_same_outputs(before, after);
  }
  // A mean over a leading axis is not a layer norm's: left as it is.
  GraphBuilder b;
  NodeId x = b.input("x", {4, 6});
  ops::ReduceAttrs first;
  first.axes = {0};
  NodeId d = b.add_node(Op::named("subtract"), "d", {x, b.add_node(Op::named("reduce_mean"), "m", {x}, first)});
  NodeId v = b.add_node(Op::named("reduce_mean"), "v", {b.multiply(d, d, "sq")}, first);
  NodeId s = b.add_node(Op::named("sqrt"), "s", {b.add(v, scalar(b, "eps", 1e-5f), "ve")});
  NodeId y = b.add_node(Op::named("divide"), "y", {d, s});
  EXPECT_EQ(count(recognize_layer_norm(b.finish({y})), Op::named("layer_norm")), 0);
}

TEST(GraphPasses, EliminateDeadNodesKeepsOutputsAndInputs) {
  GraphBuilder b;
  NodeId x = b.input("x", {4});
  NodeId unused_input = b.input("unused", {4});
  b.sigmoid(x, "dead");
  Graph g = b.finish({b.relu(x, "out")});
  Graph e = eliminate_dead_nodes(g);
  EXPECT_FALSE(e.find("dead"));
  EXPECT_TRUE(e.find("out"));
  EXPECT_TRUE(e.find("unused")) << "inputs are the model's signature";
  (void)unused_input;
}

TEST(GraphPasses, ConvertLayoutBlocksConvolutionsAndTheirEpilogues) {
  Graph g = fold_batch_norm(simplify_inference(conv_bn_relu("NCHW", true)));
  Graph c = convert_layout(g, 8);
  int blocked = 0;
  for (const Node& n : c.nodes())
    if (n.op == Op::kConv2d) {
      EXPECT_EQ(n.attrs_as<Conv2dAttrs>().data_layout, "NCHW8c");
      EXPECT_EQ(n.attrs_as<Conv2dAttrs>().kernel_layout, "OIHW8i8o");
      ++blocked;
    }
  EXPECT_EQ(blocked, 1);
  // The bias add and the relu followed the conv into NCHW8c: their outputs are 5-D.
  for (const Node& n : c.nodes())
    if (n.op == Op::kAdd || n.op == Op::kRelu) EXPECT_EQ(n.type.shape.size(), 5u) << n.name;
  expect_same_outputs(g, c);
  Graph cancelled = cancel_layout_transforms(c);
  EXPECT_EQ(count(cancelled, Op::kLayoutTransform), 2) << "one into the block layout, one out of it";
  expect_same_outputs(g, cancelled);
}

// Winograd only where its transformed weights (4x the direct ones) are
// reused over at least 16 output tiles: ResNet's 56x56, 28x28 and 14x14 3x3
// layers at batch 1, its 7x7 layer4 only from batch 4 (4 tiles an image).
TEST(GraphPasses, WinogradIsChosenWhereItsWeightsAreReusedOverEnoughTiles) {
  const Conv2dAttrs a = Conv2dAttrs::symmetric(1, 1);
  EXPECT_EQ(winograd_tile_for(a, {64, 64, 3, 3}, {1, 64, 56, 56}), 4);
  EXPECT_EQ(winograd_tile_for(a, {8, 8, 3, 3}, {1, 8, 56, 56}), 0);  // too few channels
  EXPECT_EQ(winograd_tile_for(Conv2dAttrs::symmetric(2, 1), {64, 64, 3, 3}, {1, 64, 28, 28}), 0);
  EXPECT_TRUE(winograd_reuses_weights({1, 64, 56, 56}));
  EXPECT_TRUE(winograd_reuses_weights({1, 256, 14, 14}));   // 16 tiles
  EXPECT_FALSE(winograd_reuses_weights({1, 512, 7, 7}));    // 4
  EXPECT_FALSE(winograd_reuses_weights({2, 512, 7, 7}));    // 8
  EXPECT_TRUE(winograd_reuses_weights({4, 512, 7, 7}));     // 16
}

// A grouped convolution between two plain ones (ResNeXt's bottleneck):
// blocked like them, its blocks dividing one group's channels, and its weight
// packed group by group. 24 per group: blocks of 24 where the vector holds 16
// (a vector and a half in two instructions, fuller than half-vector blocks
// of 8), of 8 where it holds 8.
TEST(GraphPasses, ConvertLayoutBlocksGroupedConvolutionsWithinTheirGroups) {
  GraphBuilder b(7);
  NodeId x = b.input("data", {1, 16, 8, 8});
  x = b.conv2d(x, b.random_constant("reduce.w", {48, 16, 1, 1}, -0.3f, 0.3f), Conv2dAttrs::symmetric(1, 0), "reduce");
  x = b.relu(x, "reduce.relu");
  x = b.conv2d(x, b.random_constant("group.w", {48, 24, 3, 3}, -0.3f, 0.3f), Conv2dAttrs::symmetric(2, 1, 1, 2),
               "group");
  x = b.relu(x, "group.relu");
  x = b.conv2d(x, b.random_constant("expand.w", {32, 48, 1, 1}, -0.3f, 0.3f), Conv2dAttrs::symmetric(1, 0), "expand");
  Graph g = b.finish({x});
  Graph c = cancel_layout_transforms(convert_layout(g, 16));
  const Node& group = c.node(*c.find("group"));
  EXPECT_EQ(group.attrs_as<Conv2dAttrs>().data_layout, "NCHW24c");
  EXPECT_EQ(group.attrs_as<Conv2dAttrs>().kernel_layout, "OIHW24i24o");
  EXPECT_EQ(group.attrs_as<Conv2dAttrs>().groups, 2);
  EXPECT_EQ(c.node(group.inputs[1]).type.shape, (Shape{2, 1, 3, 3, 24, 24}));
  EXPECT_EQ(group.type.shape, (Shape{1, 2, 4, 4, 24}));
  // Its neighbours block their 48 channels by 16: into the network's blocks,
  // 16 -> 24 and back around the grouped convolution, out of them.
  EXPECT_EQ(count(c, Op::kLayoutTransform), 4);
  expect_same_outputs(g, c);
  Graph narrow = convert_layout(g, 8);
  EXPECT_EQ(narrow.node(*narrow.find("group")).attrs_as<Conv2dAttrs>().data_layout, "NCHW8c");
  expect_same_outputs(g, narrow);
  // Blocks chosen for it (a graph tuner's) must divide a group's channels.
  EXPECT_NO_THROW(convert_layout(g, 16, {{"group", ConvBlocks{4, 12}}}));
  EXPECT_THROW(convert_layout(g, 16, {{"group", ConvBlocks{16, 16}}}), Error);
}

// ResNeXt's stage: 1x1 -> grouped 3x3 of 8 groups of 4 channels -> 1x1, in
// `layout`.
Graph narrow_groups(const std::string& layout) {
  GraphBuilder b(13);
  const bool nchw = layout == "NCHW";
  const auto conv = [&](NodeId x, const Shape& oihw, int64_t groups, int64_t pad, const std::string& name) {
    Conv2dAttrs a = Conv2dAttrs::symmetric(1, pad, 1, groups);
    a.data_layout = layout;
    a.kernel_layout = nchw ? "OIHW" : "HWIO";
    const Shape shape = nchw ? oihw : Shape{oihw[2], oihw[3], oihw[1], oihw[0]};
    return b.relu(b.conv2d(x, b.random_constant(name + ".w", shape, -0.3f, 0.3f), a, name), name + ".relu");
  };
  NodeId x = b.input("data", nchw ? Shape{1, 16, 7, 7} : Shape{1, 7, 7, 16});
  x = conv(x, {32, 16, 1, 1}, 1, 0, "reduce");
  x = conv(x, {32, 4, 3, 3}, 8, 1, "group");
  x = conv(x, {16, 32, 1, 1}, 1, 0, "expand");
  return b.finish({x});
}

// At blocks of 8, pairs of the groups of 4 run as 4 groups of 8 in the
// network's blocks: no layout transform around the grouped convolution, the
// weight block-diagonal in each merged group. At 16 (512-bit vectors) fours
// of them run as 2 groups of 16, likewise.
TEST(GraphPasses, GroupsNarrowerThanABlockMergeIntoTheNetworksBlocks) {
  for (const std::string layout : {"NCHW", "NHWC"})
    for (const int64_t block : {8, 16}) {
      SCOPED_TRACE(layout + " blocks of " + std::to_string(block));
      const Graph g = narrow_groups(layout);
      const Graph c = cancel_layout_transforms(convert_layout(g, block));
      const Node& group = c.node(*c.find("group"));
      const auto& a = group.attrs_as<Conv2dAttrs>();
      const std::string b = std::to_string(block);
      EXPECT_EQ(a.groups, 32 / block);
      EXPECT_EQ(a.data_layout, "NCHW" + b + "c");
      EXPECT_EQ(a.kernel_layout, "OIHW" + b + "i" + b + "o");
      const Node& w = c.node(group.inputs[1]);
      ASSERT_EQ(w.type.shape, (Shape{32 / block, 1, 3, 3, block, block}));
      // Output lane o of a block meets input lanes of its own group only.
      for (int64_t i = 0; i < block; ++i)
        for (int64_t o = 0; o < block; ++o)
          if (i / 4 != o / 4)
            EXPECT_EQ((*w.value)[((1 * 9 + 4) * block + i) * block + o], 0.f) << "in " << i << " out " << o;
      // Transforms only into the network's blocks and out of them.
      EXPECT_EQ(count(c, Op::kLayoutTransform), 2);
      expect_same_outputs(g, c);
    }
}

TEST(GraphPasses, GlobalPoolingFollowsTheConvolutionIntoItsBlocks) {
  // conv -> global average pool: the pool reads the convolution's blocks
  // directly, and only the pooled 1x1 values are transformed back.
  GraphBuilder b(5);
  NodeId x = b.input("data", {1, 8, 7, 7});
  x = b.conv2d(x, b.random_constant("w", {16, 8, 3, 3}, -0.3f, 0.3f), Conv2dAttrs::symmetric(1, 1), "conv");
  Graph g = b.finish({b.global_avg_pool2d(b.relu(x, "relu"), "NCHW", "pool")});
  Graph c = cancel_layout_transforms(convert_layout(g, 8));
  const Node& pool = c.node(*c.find("pool"));
  EXPECT_EQ(pool.attrs_as<GlobalPoolAttrs>().layout, "NCHW8c");
  EXPECT_EQ(pool.type.shape, (Shape{1, 2, 1, 1, 8}));
  for (const Node& n : c.nodes())
    if (n.op == Op::kLayoutTransform && n.attrs_as<LayoutTransformAttrs>().dst == "NCHW")
      EXPECT_EQ(n.type.shape, (Shape{1, 16, 1, 1})) << n.name << " moves more than the pooled values";
  expect_same_outputs(g, c);
}

// Squeeze-excitation (MobileNet-v3): the per-channel scale, a (1, C, 1, 1)
// activation from the pooled branch, broadcasts over the blocked rows and
// columns: the multiply runs in the convolutions' blocks, and no transform
// moves the full-size activation out of them and back.
TEST(GraphPasses, SqueezeExcitationScalesInTheConvolutionsBlocks) {
  GraphBuilder b(11);
  NodeId x = b.input("data", {1, 16, 6, 6});
  x = b.relu(b.conv2d(x, b.random_constant("w", {32, 16, 3, 3}, -0.3f, 0.3f), Conv2dAttrs::symmetric(1, 1), "conv"),
             "relu");
  NodeId s = b.global_avg_pool2d(x, "NCHW", "pool");
  s = b.conv2d(s, b.random_constant("fc.w", {32, 32, 1, 1}, -0.3f, 0.3f), Conv2dAttrs::symmetric(1, 0), "fc");
  s = b.sigmoid(s, "gate");
  NodeId scaled = b.multiply(s, x, "scale");  // the broadcast operand first
  Graph g = b.finish({b.conv2d(scaled, b.random_constant("proj.w", {16, 32, 1, 1}, -0.3f, 0.3f),
                               Conv2dAttrs::symmetric(1, 0), "proj")});
  Graph c = cancel_layout_transforms(convert_layout(g, 8));
  const Node& scale = c.node(*c.find("scale"));
  EXPECT_EQ(scale.type.shape, (Shape{1, 4, 6, 6, 8}));
  EXPECT_EQ(c.node(scale.inputs[0]).type.shape, (Shape{1, 4, 1, 1, 8}));
  EXPECT_EQ(count(c, Op::kLayoutTransform), 2) << "one into the blocks, one out of them";
  expect_same_outputs(g, c);
  // The gate in blocks of 4 (a graph tuner's choice): only its 32 values
  // move into the activation's blocks of 8.
  Graph mixed = cancel_layout_transforms(convert_layout(g, 8, {{"fc", ConvBlocks{8, 4}}}));
  EXPECT_EQ(mixed.node(*mixed.find("scale")).type.shape, (Shape{1, 4, 6, 6, 8}));
  EXPECT_EQ(count(mixed, Op::kLayoutTransform), 3);
  for (const Node& n : mixed.nodes())
    if (n.op == Op::kLayoutTransform && n.attrs_as<LayoutTransformAttrs>().src == "NCHW4c")
      EXPECT_EQ(n.attrs_as<LayoutTransformAttrs>().dst, "NCHW8c") << n.name;
  expect_same_outputs(g, mixed);
}

// ConvNeXt's block: its convolution's output permuted to NHWC (for a layer
// norm), permuted back, scaled per channel and added to the residual. Each
// permute is a layout transform joined with the one out of (or into) the
// convolutions' blocks, and the scale runs in NHWC between them: one pass
// over the data on each side instead of two, no transpose left.
TEST(GraphPasses, PermutesAroundNhwcJoinTheBlocksTransforms) {
  GraphBuilder b(13);
  NodeId x = b.input("data", {1, 16, 6, 6});
  NodeId c = b.conv2d(x, b.random_constant("w", {16, 16, 3, 3}, -0.3f, 0.3f), Conv2dAttrs::symmetric(1, 1), "conv");
  NodeId nhwc = b.sigmoid(b.transpose(c, {0, 2, 3, 1}, "to_nhwc"), "act");
  NodeId back = b.transpose(nhwc, {0, 3, 1, 2}, "to_nchw");
  NodeId scaled = b.multiply(b.random_constant("gamma", {16, 1, 1}, 0.5f, 1.5f), back, "scale");
  NodeId sum = b.add(c, scaled, "residual");
  Graph g = b.finish({b.conv2d(sum, b.random_constant("next.w", {16, 16, 1, 1}, -0.3f, 0.3f),
                               Conv2dAttrs::symmetric(1, 0), "next")});
  Graph c8 = cancel_layout_transforms(convert_layout(g, 8));
  EXPECT_EQ(count(c8, Op::kTranspose), 0);
  EXPECT_EQ(c8.node(*c8.find("scale")).type.shape, (Shape{1, 6, 6, 16}));
  EXPECT_EQ(c8.node(*c8.find("residual")).type.shape, (Shape{1, 2, 6, 6, 8}));
  // Into the blocks, out to NHWC, back into the blocks, out of them.
  EXPECT_EQ(count(c8, Op::kLayoutTransform), 4);
  for (const Node& n : c8.nodes())
    if (n.op == Op::kLayoutTransform) {
      const auto& t = n.attrs_as<LayoutTransformAttrs>();
      EXPECT_FALSE((t.src == "NCHW" && t.dst == "NHWC") || (t.src == "NHWC" && t.dst == "NCHW"))
          << n.name << ": a step through NCHW between the blocks and NHWC is left";
    }
  expect_same_outputs(g, c8);
}

TEST(GraphPasses, CancelLayoutTransformsRemovesInversePairsAndMergesChains) {
  GraphBuilder b;
  NodeId x = b.input("x", {1, 16, 4, 4});
  NodeId there = b.layout_transform(x, "NCHW", "NCHW8c", "to_8c");
  NodeId back = b.layout_transform(there, "NCHW8c", "NCHW", "to_nchw");
  NodeId a = b.relu(back, "a");
  NodeId nhwc = b.layout_transform(b.layout_transform(a, "NCHW", "NCHW4c", "to_4c"), "NCHW4c", "NHWC", "to_nhwc");
  Graph g = b.finish({nhwc});
  Graph c = cancel_layout_transforms(g);
  EXPECT_EQ(count(c, Op::kLayoutTransform), 1);
  const Node& merged = c.node(c.outputs()[0]);
  EXPECT_EQ(merged.attrs_as<LayoutTransformAttrs>().src, "NCHW");
  EXPECT_EQ(merged.attrs_as<LayoutTransformAttrs>().dst, "NHWC");
  EXPECT_EQ(c.node(c.node(*c.find("a")).inputs[0]).op, Op::kInput);
  expect_same_outputs(g, c);
}

TEST(GraphPasses, ReadersCollapsingTheSameChainShareOneTransform) {
  // A value in 16-channel blocks, read in 8-channel blocks by two readers
  // through NCHW (a pool's output feeding a convolution and a residual add):
  // one 16c -> 8c transform, not one per reader.
  GraphBuilder b;
  NodeId x = b.input("x", {1, 16, 4, 4, 16});
  NodeId plain = b.layout_transform(x, "NCHW16c", "NCHW", "to_nchw");
  NodeId first = b.relu(b.layout_transform(plain, "NCHW", "NCHW8c", "for_conv"), "first");
  NodeId second = b.sigmoid(b.layout_transform(plain, "NCHW", "NCHW8c", "for_add"), "second");
  Graph g = b.finish({b.add(first, second, "sum")});
  Graph c = cancel_layout_transforms(g);
  ASSERT_EQ(count(c, Op::kLayoutTransform), 1);
  const NodeId shared = c.node(*c.find("first")).inputs[0];
  EXPECT_EQ(c.node(*c.find("second")).inputs[0], shared);
  EXPECT_EQ(c.node(shared).attrs_as<LayoutTransformAttrs>().src, "NCHW16c");
  EXPECT_EQ(c.node(shared).attrs_as<LayoutTransformAttrs>().dst, "NCHW8c");
  expect_same_outputs(g, c);
}

// Convolutions of constant weights become matrix products (their weights
// stored OHWI by the build); one whose weight is a graph input stays direct,
// and the interpreter computes the same outputs either way.
TEST(GraphPasses, ChooseImplicitGemmTakesConvolutionsOfConstantWeights) {
  GraphBuilder b(3);
  NodeId x = b.input("data", {1, 8, 9, 9});
  NodeId given = b.input("given.weight", {8, 8, 3, 3});
  NodeId y = b.conv2d(x, b.random_constant("conv.weight", {8, 8, 3, 3}, -0.3f, 0.3f), Conv2dAttrs::symmetric(1, 1),
                      "conv");
  y = b.conv2d(y, given, Conv2dAttrs::symmetric(1, 1), "conv_given");
  const Graph g = b.finish({y});
  const Graph chosen = choose_implicit_gemm(g);
  std::map<std::string, bool> products;
  for (const Node& n : chosen.nodes())
    if (n.op == Op::kConv2d) products[n.name] = n.attrs_as<Conv2dAttrs>().implicit_gemm;
  EXPECT_EQ(products, (std::map<std::string, bool>{{"conv", true}, {"conv_given", false}}));
  expect_same_outputs(g, chosen);
}

// In NHWC too (HWIO weights, read as they are), whatever the positions (NHWC
// has no direct GPU schedule but the default one); a grouped one stays direct.
TEST(GraphPasses, ChooseImplicitGemmTakesNhwcConvolutions) {
  Conv2dAttrs nhwc = Conv2dAttrs::symmetric(1, 1);
  nhwc.data_layout = "NHWC";
  nhwc.kernel_layout = "HWIO";
  Conv2dAttrs grouped = nhwc;
  grouped.groups = 2;
  GraphBuilder b(5);
  NodeId x = b.input("data", {1, 9, 9, 8});
  NodeId y = b.conv2d(x, b.random_constant("conv.weight", {3, 3, 8, 8}, -0.3f, 0.3f), nhwc, "conv");
  y = b.conv2d(y, b.random_constant("grouped.weight", {3, 3, 4, 8}, -0.3f, 0.3f), grouped, "grouped");
  const Graph g = b.finish({y});
  auto products_of = [](const Graph& chosen) {
    std::map<std::string, bool> products;
    for (const Node& n : chosen.nodes())
      if (n.op == Op::kConv2d) products[n.name] = n.attrs_as<Conv2dAttrs>().implicit_gemm;
    return products;
  };
  const Graph chosen = choose_implicit_gemm(g);
  EXPECT_EQ(products_of(chosen), (std::map<std::string, bool>{{"conv", true}, {"grouped", false}}));
  expect_same_outputs(g, chosen);
  EXPECT_EQ(products_of(choose_implicit_gemm(g, ImplicitGemmChoice::where(3136, 3136))).at("conv"), true);  // 81
  // The same convolution in NCHW stays direct under that choice.
  GraphBuilder c(5);
  NodeId z = c.input("data", {1, 8, 9, 9});
  z = c.conv2d(z, c.random_constant("conv.weight", {8, 8, 3, 3}, -0.3f, 0.3f), Conv2dAttrs::symmetric(1, 1), "conv");
  EXPECT_EQ(products_of(choose_implicit_gemm(c.finish({z}), ImplicitGemmChoice::where(3136, 3136))).at("conv"), false);
}

TEST(GraphFusion, ConvolutionsTakeBiasResidualAndReluAsOneKernel) {
  // A residual block: relu(conv2(relu(conv1(x))) + x).
  GraphBuilder b(7);
  NodeId x = b.input("x", {1, 8, 6, 6});
  NodeId w1 = b.random_constant("w1", {8, 8, 3, 3}, -0.3f, 0.3f);
  NodeId w2 = b.random_constant("w2", {8, 8, 3, 3}, -0.3f, 0.3f);
  NodeId y = b.relu(b.conv2d(x, w1, Conv2dAttrs::symmetric(1, 1), "conv1"), "relu1");
  y = b.conv2d(y, w2, Conv2dAttrs::symmetric(1, 1), "conv2");
  y = b.add(y, b.random_constant("bias.value", {8, 1, 1}, -1, 1), "bias");
  y = b.relu(b.add(x, y, "residual"), "relu2");
  Graph g = b.finish({y});
  auto groups = fuse_operators(g);
  ASSERT_EQ(groups.size(), 2u);
  std::vector<std::string> second;
  for (NodeId id : groups[1].nodes) second.push_back(g.node(id).name);
  EXPECT_EQ(second, (std::vector<std::string>{"conv2", "bias", "residual", "relu2"}));
  EXPECT_EQ(groups[0].nodes.size(), 2u);  // conv1 + relu1
}

TEST(GraphFusion, AValueReadTwiceEndsItsKernel) {
  GraphBuilder b;
  NodeId x = b.input("x", {4, 4});
  NodeId r = b.relu(x, "r");
  Graph g = b.finish({b.add(b.sigmoid(r, "s"), r, "out")});
  // r is read by s and by out: it must reach memory, so its kernel ends there.
  auto groups = fuse_operators(g);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].nodes.size(), 1u);
  EXPECT_EQ(g.node(groups[1].output()).name, "out");
}

TEST(GraphFusion, MobilenetV2DepthwiseJoinsItsProjectionFromTheChosenSize) {
  PassOptions blocked;
  blocked.block = 8;
  const Graph g = optimize(get_network("mobilenet-v2"), blocked);
  auto pairs = [&](int64_t min_rows) {
    std::vector<FusedGroup> with;
    for (const FusedGroup& group : fuse_operators(g, {.depthwise_projection_min_rows = min_rows}))
      if (group.projection >= 0) with.push_back(group);
    return with;
  };
  EXPECT_TRUE(pairs(0).empty());
  EXPECT_EQ(pairs(1).size(), 17u);  // every inverted-residual block
  const auto large = pairs(56);     // blocks 1-3: depthwise outputs of 112 and 56 rows
  ASSERT_EQ(large.size(), 3u);
  for (const FusedGroup& group : large) {
    const Node& dw = g.node(group.anchor());
    const Node& projection = g.node(group.projection);
    EXPECT_TRUE(is_depthwise(g, dw)) << dw.name;
    EXPECT_GE(dw.type.shape[2], 56) << dw.name;
    // The projection reads the depthwise's last epilogue node, and its own
    // epilogue (bias, residual add) follows it in the group.
    const auto at = std::find(group.nodes.begin(), group.nodes.end(), group.projection);
    ASSERT_NE(at, group.nodes.end());
    EXPECT_EQ(projection.inputs[0], *(at - 1)) << projection.name;
    EXPECT_GE(at - group.nodes.begin(), 2) << "depthwise and at least its bias before " << projection.name;
    EXPECT_GE(group.nodes.end() - at, 2) << projection.name << " and at least its bias";
  }
  // Fewer kernels: each fused pair was two.
  EXPECT_EQ(fuse_operators(g, {.depthwise_projection_min_rows = 0}).size(),
            fuse_operators(g, {.depthwise_projection_min_rows = 1}).size() + 17);
}

}  // namespace
}  // namespace tessera::graph
