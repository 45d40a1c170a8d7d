// A dimension that varies: buckets, the proof that padding to one is exact
// (against the interpreter at the unpadded size), the mask it adds, and the
// models it refuses, each naming the node.
#include "graph/varying_dimension.h"

#include <gtest/gtest.h>

#include <functional>

#include "graph/builder.h"
#include "graph/interpreter.h"
#include "graph_test_util.h"
#include "ops/conv2d.h"
#include "ops/reduce.h"
#include "ops/take.h"

namespace tessera::graph {
namespace {

using test::error_of;
using test::random_array;

TEST(VaryingDimension, DefaultBucketsArePowersOfTwoFromAThirtySecondOfTheMax) {
  EXPECT_EQ(default_buckets(1, 512), (std::vector<int64_t>{16, 32, 64, 128, 256, 512}));
  EXPECT_EQ(default_buckets(1, 16), (std::vector<int64_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(default_buckets(3, 100), (std::vector<int64_t>{4, 8, 16, 32, 64, 100}));
  EXPECT_NE(error_of([] { default_buckets(5, 4); }).find("1 <= min <= max"), std::string::npos);
}

TEST(VaryingDimension, ListedBucketsRiseWithinTheRangeAndEndAtItsMax) {
  EXPECT_EQ(checked_buckets({16, 64}, 1, 512), (std::vector<int64_t>{16, 64, 512}));
  EXPECT_EQ(checked_buckets({16, 512}, 1, 512), (std::vector<int64_t>{16, 512}));
  EXPECT_NE(error_of([] { checked_buckets({64, 16}, 1, 512); }).find("buckets must increase: 16 follows 64"),
            std::string::npos);
  EXPECT_NE(error_of([] { checked_buckets({600}, 1, 512); }).find("bucket 600 is outside the range 1..512"),
            std::string::npos);
  std::vector<int64_t> many;
  for (int64_t b = 1; b <= 13; ++b) many.push_back(b);
  EXPECT_NE(error_of([&] { checked_buckets(many, 1, 100); }).find("at most 12"), std::string::npos);
}

// Token ids (1, n) -> embeddings -> a dense layer per token -> scores of
// every token against every other -> softmax over the keys -> reduced by the
// values: what attention is, unfused.
Graph token_mixer(int64_t n) {
  GraphBuilder b;
  const NodeId ids = b.input("ids", {1, n}, DataType::kInt64);
  ops::TakeAttrs take;
  const NodeId table = b.constant("table", random_array({10, 4}, 3));
  const NodeId x = b.add_node(Op::named("take"), "embed", {table, ids}, take);  // (1, n, 4)
  const NodeId rows = b.reshape(x, {n, 4}, "rows");
  const NodeId h = b.dense(rows, b.constant("w", random_array({4, 4}, 4)), "proj");
  const NodeId h3 = b.reshape(h, {1, n, 4}, "tokens");
  const NodeId scores = b.batch_matmul(h3, h3, "scores");  // (1, n, n)
  const NodeId p = b.softmax(scores, -1, "probs");
  const NodeId v = b.transpose(h3, {0, 2, 1}, "values_t");  // (1, 4, n)
  return b.finish({b.batch_matmul(p, v, "mixed")});  // (1, n, 4)
}

runtime::NDArray ids_of(const std::vector<float>& values) {
  return test::array({1, static_cast<int64_t>(values.size())}, values);
}

TEST(VaryingDimension, TokenwiseLayersPadExactlyAndTheSoftmaxOverKeysIsMasked) {
  const PaddedGraph padded = pad_varying_dimension(token_mixer(8), 8, token_mixer(5), 5, 1);
  EXPECT_TRUE(padded.inexact.empty()) << padded.inexact;
  EXPECT_TRUE(padded.masked);
  EXPECT_EQ(padded.inputs, (std::map<std::string, VaryingAxes>{{"ids", {{1, 1}}}}));
  ASSERT_EQ(padded.outputs.size(), 1u);
  EXPECT_EQ(padded.outputs[0], (VaryingAxes{{1, 1}}));
  const auto mask = padded.graph.find(kPaddingMaskInput);
  ASSERT_TRUE(mask.has_value());
  EXPECT_EQ(padded.graph.node(*mask).type.shape, (Shape{8}));

  // Five tokens padded to eight (the last repeated), the mask set: the first
  // five rows are what the graph computes at five tokens.
  std::vector<runtime::NDArray> at_five;
  at_five.push_back(ids_of({3, 1, 4, 1, 5}));
  const runtime::NDArray want = std::move(interpret(token_mixer(5), at_five)[0]);
  auto padded_run = [&](bool masked) {
    std::map<std::string, runtime::NDArray> inputs;
    inputs.emplace("ids", ids_of({3, 1, 4, 1, 5, 5, 5, 5}));
    runtime::NDArray keys({8});
    for (int64_t j = 5; j < 8 && masked; ++j) keys[j] = kPaddedKey;
    inputs.emplace(kPaddingMaskInput, std::move(keys));
    return std::move(interpret(padded.graph, inputs)[0]);
  };
  auto error_of_first_five = [&](const runtime::NDArray& got) {
    EXPECT_EQ(got.shape(), (Shape{1, 8, 4}));
    double worst = 0;
    for (int64_t i = 0; i < 5 * 4; ++i) worst = std::max(worst, std::abs(double(got[i]) - want[i]));
    return worst;
  };
  EXPECT_LT(error_of_first_five(padded_run(true)), 1e-6);
  // Without the mask the padded keys would change every row: the test can fail.
  const double moved = error_of_first_five(padded_run(false));
  EXPECT_GT(moved, 1e-3);
}

// One varying input (1, n, 4) through `layer`: what the proof says of it.
std::string inexact_after(const std::function<NodeId(GraphBuilder&, NodeId, int64_t)>& layer) {
  auto make = [&](int64_t n) {
    GraphBuilder b;
    const NodeId x = b.input("x", {1, n, 4});
    return b.finish({layer(b, x, n)});
  };
  return pad_varying_dimension(make(8), 8, make(6), 6, 2).inexact;
}

TEST(VaryingDimension, WhatPaddingWouldChangeIsNamed) {
  ops::ReduceAttrs mean;
  mean.axes = {1};
  EXPECT_EQ(inexact_after([&](GraphBuilder& b, NodeId x, int64_t) {
              return b.add_node(Op::named("reduce_mean"), "pool_tokens", {x}, mean);
            }),
            "node 'pool_tokens' (reduce_mean) reduces over the varying axis");
  // The last token (index -1) of a bucket is a padded one.
  ops::TakeAttrs take;
  take.axis = 1;
  EXPECT_EQ(inexact_after([&](GraphBuilder& b, NodeId x, int64_t) {
              return b.add_node(Op::named("take"), "last", {x, b.constant("minus_one", test::array({1}, {-1}))}, take);
            }),
            "node 'last' (take) gathers padded (or negative) positions of the varying axis");
  // The first token is in every run (a pooler); the third is not (min is 2).
  EXPECT_EQ(inexact_after([&](GraphBuilder& b, NodeId x, int64_t) {
              return b.add_node(Op::named("take"), "first", {x, b.constant("zero", test::array({1}, {0}))}, take);
            }),
            "");
  EXPECT_EQ(inexact_after([&](GraphBuilder& b, NodeId x, int64_t) {
              return b.add_node(Op::named("take"), "third", {x, b.constant("two", test::array({1}, {2}))}, take);
            }),
            "node 'third' (take) gathers padded (or negative) positions of the varying axis");
  // A convolution's window over the varying axis (an image's height).
  EXPECT_EQ(inexact_after([&](GraphBuilder& b, NodeId x, int64_t n) {
              const NodeId image = b.reshape(x, {1, 1, n, 4}, "image");
              ops::Conv2dAttrs conv;
              conv.pad_top = conv.pad_left = conv.pad_bottom = conv.pad_right = 1;
              return b.conv2d(image, b.constant("k", random_array({2, 1, 3, 3}, 5)), conv, "conv");
            }),
            "node 'conv' (conv2d) reads the varying axis at computed positions (a window or a shift)");
  // Elementwise work, a softmax over the fixed axis and a transpose stay exact, unmasked.
  EXPECT_EQ(inexact_after([&](GraphBuilder& b, NodeId x, int64_t) {
              return b.transpose(b.softmax(b.relu(x), -1, "over_features"), {0, 2, 1});
            }),
            "");
  // A sum over the tokens of a product with a padded factor that is not 0 there.
  EXPECT_EQ(inexact_after([&](GraphBuilder& b, NodeId x, int64_t) {
              return b.batch_matmul(b.transpose(x, {0, 2, 1}), b.transpose(x, {0, 2, 1}), "gram");
            }),
            "node 'gram' (batch_matmul) reduces over the varying axis");
}

TEST(VaryingDimension, AConstantComputedFromTheSizeIsRefused) {
  // 1 / n folded into a constant (a mean written as sum * (1 / n)): equal
  // shapes, other values at the two sizes.
  auto make = [](int64_t n) {
    GraphBuilder b;
    const NodeId x = b.input("x", {1, n, 4});
    return b.finish({b.multiply(x, b.constant("one_over_n", test::array({1}, {1.0f / n})), "scaled")});
  };
  EXPECT_NE(error_of([&] { pad_varying_dimension(make(8), 8, make(6), 6, 1); })
                .find("node 'one_over_n' (constant): its values depend on the size of the varying dimension"),
            std::string::npos);
  // A constant that grows with the size and agrees on shared positions (a
  // position table) is fine.
  auto positions = [](int64_t n) {
    GraphBuilder b;
    const NodeId x = b.input("x", {1, n, 4});
    runtime::NDArray table({1, n, 4});
    for (int64_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i);
    return b.finish({b.add(x, b.constant("positions", std::move(table)), "placed")});
  };
  EXPECT_EQ(pad_varying_dimension(positions(8), 8, positions(6), 6, 1).inexact, "");
}

}  // namespace
}  // namespace tessera::graph
