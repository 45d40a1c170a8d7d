// attention (ops/attention.cc): the fused kernel and its reference against
// the three steps written out here in double (scores, softmax, weighted
// values), with shapes no vector divides, a mask broadcast over heads and
// rows, query tiles that do not divide the rows, and rows of several key tiles.
#include <gtest/gtest.h>

#include <cmath>

#include "graph/builder.h"
#include "ir/compute_dag.h"
#include "ops/attention.h"
#include "ops/operator.h"
#include "ops_test_util.h"
#include "run_graph.h"
#include "tessera/error.h"

namespace tessera::ops {
namespace {

struct Case {
  int64_t groups, heads, m, n, d, rows;
  Shape mask;         // empty: none
  int64_t keys = 0;   // keys per tile (0: the operator's choice)
  bool last_tile_masked = false;  // every key of the last tile masked (with -1e30, as padding is)
};

std::vector<double> attention_formula(const Case& c, const std::vector<float>& q, const std::vector<float>& k,
                                      const std::vector<float>& v, const std::vector<float>& mask, double scale) {
  const int64_t batch = c.groups * c.heads;
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < c.m; ++i) {
      std::vector<double> p(static_cast<size_t>(c.n));
      double top = -INFINITY, sum = 0;
      for (int64_t j = 0; j < c.n; ++j) {
        double s = 0;
        for (int64_t x = 0; x < c.d; ++x) s += double{q[(b * c.m + i) * c.d + x]} * k[(b * c.n + j) * c.d + x];
        s *= scale;
        if (!c.mask.empty()) {
          const int64_t g = b / c.heads, h = b % c.heads;
          const Shape& ms = c.mask;
          s += mask[((((ms[0] == 1 ? 0 : g) * ms[1] + (ms[1] == 1 ? 0 : h)) * ms[2] + (ms[2] == 1 ? 0 : i)) * ms[3]) +
                    (ms[3] == 1 ? 0 : j)];
        }
        p[j] = s;
        top = std::max(top, s);
      }
      for (double& e : p) sum += (e = std::exp(e - top));
      for (int64_t x = 0; x < c.d; ++x) {
        double acc = 0;
        for (int64_t j = 0; j < c.n; ++j) acc += p[j] / sum * v[(b * c.n + j) * c.d + x];
        out.push_back(acc);
      }
    }
  return out;
}

// Random q, k and v (B, rows, D) for `c` and its mask, from seeds seed..seed+3.
struct Operands {
  std::vector<float> q, k, v, mask;
};
Operands random_operands(const Case& c, uint32_t seed) {
  const int64_t batch = c.groups * c.heads;
  Operands o{test::random_data(batch * c.m * c.d, seed), test::random_data(batch * c.n * c.d, seed + 1),
             test::random_data(batch * c.n * c.d, seed + 2), {}};
  for (float& x : o.q) x *= 3.0f;  // scores spread enough that the softmax is far from uniform
  if (!c.mask.empty()) {
    o.mask = test::random_data(num_elements(c.mask), seed + 3);
    for (size_t i = 0; i < o.mask.size(); i += 3) o.mask[i] = -10000.0f;  // masked positions
    if (c.last_tile_masked)
      for (size_t i = 0; i < o.mask.size(); ++i)
        if (static_cast<int64_t>(i) % c.n >= c.n - c.keys) o.mask[i] = -1e30f;
  }
  return o;
}

// The graph interpreted (the operator's reference) and compiled, against `want`.
void expect_both_close(const graph::Graph& g, const std::vector<test::Input>& inputs, const std::vector<double>& want,
                       const std::string& what) {
  const auto o = test::run_both(g, inputs);
  test::expect_close(o.interpreted, want, 1e-6, "reference " + what);
  test::expect_close(o.compiled, want, 2e-6, "compiled " + what);
}

TEST(AttentionOperator, KernelAndReferenceFollowScoresSoftmaxAndValues) {
  const std::vector<Case> cases = {
      {1, 2, 5, 7, 8, 4, {}},               // rows not a multiple of the tile, keys of no vector width
      {2, 3, 9, 19, 20, 4, {2, 1, 1, 19}},  // a padding mask per sequence, as BERT's
      {1, 2, 6, 6, 16, 3, {1, 1, 6, 6}},    // a causal mask shared by every head
      {1, 1, 1, 33, 64, 4, {1, 1, 1, 33}},  // one query row
      // Several key tiles, each with its own maximum and sum, combined:
      {1, 2, 5, 12, 8, 4, {}, 4},                    // three tiles of 4 keys
      {2, 2, 6, 24, 16, 3, {2, 1, 1, 24}, 8, true},  // a padding mask that empties the last tile
      {1, 1, 3, 300, 16, 4, {1, 1, 3, 300}},         // a long row: 304 keys computed, 2 tiles of 152
      {1, 2, 197, 197, 16, 4, {1, 1, 1, 197}},       // ViT's 197 tokens: 200 rows and 208 keys computed
  };
  for (const Case& c : cases) {
    const int64_t batch = c.groups * c.heads;
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
    const Shape qs{batch, c.m, c.d}, ks{batch, c.n, c.d};
    const auto [q, k, v, mask] = random_operands(c, 1);
    graph::GraphBuilder b;
    std::vector<graph::NodeId> in = {b.input("q", qs), b.input("k", ks), b.input("v", ks)};
    if (!c.mask.empty()) in.push_back(b.input("mask", c.mask));
    AttentionAttrs a{scale, c.heads, !c.mask.empty(), c.rows, c.keys};
    const graph::Graph g = b.finish({b.add_node(graph::Op::named("attention"), "att", in, a)});
    std::vector<test::Input> inputs = {{qs, q}, {ks, k}, {ks, v}};
    if (!c.mask.empty()) inputs.push_back({c.mask, mask});
    const auto want = attention_formula(c, q, k, v, mask, scale);
    expect_both_close(g, inputs, want,
                      "B=" + std::to_string(batch) + " M=" + std::to_string(c.m) + " N=" + std::to_string(c.n));
  }
}

// (B, rows, D) data as (groups, rows, heads, D): b = group * heads + head.
template <class T>
std::vector<T> sequence_first(const std::vector<T>& x, int64_t groups, int64_t heads, int64_t rows, int64_t d) {
  std::vector<T> out(x.size());
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < d; ++c)
          out[static_cast<size_t>(((g * rows + r) * heads + h) * d + c)] =
              x[static_cast<size_t>(((g * heads + h) * rows + r) * d + c)];
  return out;
}

// Sequence first, q, k, v and the output are (groups, rows, heads, D): the
// same attention, its heads read and written in place. (Heads and D of no
// vector width; a padding mask; several key tiles; the CPU schedule's query
// tiles per head.)
TEST(AttentionOperator, SequenceFirstReadsAndWritesTheHeadsInPlace) {
  const std::vector<Case> cases = {
      {2, 3, 5, 7, 8, 4, {2, 1, 1, 7}},
      {1, 2, 6, 12, 5, 4, {}, 4},
      {2, 12, 9, 9, 16, 4, {}},
  };
  for (const Case& c : cases) {
    const double scale = 0.125;
    const auto [q, k, v, mask] = random_operands(c, 5);
    const Shape qs{c.groups, c.m, c.heads, c.d}, ks{c.groups, c.n, c.heads, c.d};
    graph::GraphBuilder b;
    std::vector<graph::NodeId> in = {b.input("q", qs), b.input("k", ks), b.input("v", ks)};
    if (!c.mask.empty()) in.push_back(b.input("mask", c.mask));
    AttentionAttrs a{scale, c.heads, !c.mask.empty(), c.rows, c.keys, /*sequence_first=*/true};
    const graph::NodeId out = b.add_node(graph::Op::named("attention"), "att", in, a);
    const graph::Graph g = b.finish({out});
    EXPECT_EQ(g.node(out).type.shape, qs);
    std::vector<test::Input> inputs = {{qs, sequence_first(q, c.groups, c.heads, c.m, c.d)},
                                       {ks, sequence_first(k, c.groups, c.heads, c.n, c.d)},
                                       {ks, sequence_first(v, c.groups, c.heads, c.n, c.d)}};
    if (!c.mask.empty()) inputs.push_back({c.mask, mask});
    const auto want = sequence_first(attention_formula(c, q, k, v, mask, scale), c.groups, c.heads, c.m, c.d);
    expect_both_close(g, inputs, want, "G=" + std::to_string(c.groups) + " H=" + std::to_string(c.heads));
  }
  const Operator& op = find_operator("attention");
  AttentionAttrs two_heads{1.0, 2};
  two_heads.sequence_first = true;
  EXPECT_THROW(op.infer_shape({{1, 4, 3, 8}, {1, 5, 3, 8}, {1, 5, 3, 8}}, two_heads), Error);  // 3 heads given
  EXPECT_THROW(op.infer_shape({{1, 4, 8}, {1, 5, 8}, {1, 5, 8}}, two_heads), Error);           // (B, M, D)
  EXPECT_EQ(op.infer_shape({{2, 4, 2, 8}, {2, 5, 2, 8}, {2, 5, 2, 8}}, two_heads), (Shape{2, 4, 2, 8}));
}

// Packed, q, k and v each read their part of a (groups, rows, 3, heads, D)
// input, as one dense layer of the three projections' weights stacked
// writes them (given three times): the same attention, each part read in
// place. (A padding mask; several key tiles; heads of no vector width.)
TEST(AttentionOperator, PackedReadsQueriesKeysAndValuesFromOneInput) {
  const std::vector<Case> cases = {
      {2, 3, 7, 7, 8, 4, {2, 1, 1, 7}},
      {1, 2, 12, 12, 5, 4, {}, 4},
      {2, 12, 9, 9, 16, 4, {}},
  };
  for (const Case& c : cases) {
    const double scale = 0.125;
    const auto [q, k, v, mask] = random_operands(c, 9);
    // (G, rows, 3, H, D): each token's q heads, then its k heads, then its v heads.
    const std::vector<float> parts[3] = {sequence_first(q, c.groups, c.heads, c.m, c.d),
                                         sequence_first(k, c.groups, c.heads, c.n, c.d),
                                         sequence_first(v, c.groups, c.heads, c.n, c.d)};
    const int64_t token = c.heads * c.d;
    std::vector<float> packed;
    for (int64_t t = 0; t < c.groups * c.m; ++t)
      for (const auto& part : parts)
        packed.insert(packed.end(), part.begin() + t * token, part.begin() + (t + 1) * token);
    const Shape ps{c.groups, c.m, 3, c.heads, c.d};
    graph::GraphBuilder b;
    const graph::NodeId qkv = b.input("qkv", ps);
    std::vector<graph::NodeId> in = {qkv, qkv, qkv};
    if (!c.mask.empty()) in.push_back(b.input("mask", c.mask));
    AttentionAttrs a{scale, c.heads, !c.mask.empty(), c.rows, c.keys, /*sequence_first=*/true, /*packed=*/true};
    const graph::NodeId out = b.add_node(graph::Op::named("attention"), "att", in, a);
    const graph::Graph g = b.finish({out});
    EXPECT_EQ(g.node(out).type.shape, (Shape{c.groups, c.m, c.heads, c.d}));
    std::vector<test::Input> inputs = {{ps, packed}};  // the one input, read as q, k and v
    if (!c.mask.empty()) inputs.push_back({c.mask, mask});
    const auto want = sequence_first(attention_formula(c, q, k, v, mask, scale), c.groups, c.heads, c.m, c.d);
    expect_both_close(g, inputs, want, "G=" + std::to_string(c.groups) + " H=" + std::to_string(c.heads));
  }
  const Operator& op = find_operator("attention");
  AttentionAttrs packed{1.0, 2};
  packed.sequence_first = packed.packed = true;
  const Shape x{2, 4, 3, 2, 8};
  EXPECT_EQ(op.infer_shape({x, x, x}, packed), (Shape{2, 4, 2, 8}));
  EXPECT_EQ(op.infer_shape({x, x, x, {2, 1, 1, 4}}, AttentionAttrs{1.0, 2, true, 4, 0, true, true}),
            (Shape{2, 4, 2, 8}));
  EXPECT_EQ(op.infer_shape({x, {2, 6, 3, 2, 8}, {2, 6, 3, 2, 8}}, packed), (Shape{2, 4, 2, 8}));  // 6 keys
  EXPECT_THROW(op.infer_shape({{2, 4, 2, 2, 8}, x, x}, packed), Error);  // two parts, not three
  EXPECT_THROW(op.infer_shape({{2, 4, 3, 3, 8}, {2, 4, 3, 3, 8}, {2, 4, 3, 3, 8}}, packed), Error);  // 3 heads
  EXPECT_THROW(op.infer_shape({x, x, {2, 4, 2, 8}}, packed), Error);                                 // v unpacked
  EXPECT_THROW(op.infer_shape({x, x, x, {2, 1, 1, 5}}, AttentionAttrs{1.0, 2, true, 4, 0, true, true}),
               Error);  // a mask of 5 keys
  packed.sequence_first = false;
  EXPECT_THROW(op.infer_shape({x, x, x}, packed), Error);
}

// The kernel computes whole tiles of query rows and keys in whole vectors:
// ragged ones padded (a padded key weighs nothing, a padded row is not written).
TEST(AttentionOperator, RowsAndKeysArePaddedToWholeTilesAndVectors) {
  EXPECT_EQ(padded_keys(197), 208);
  EXPECT_EQ(padded_keys(128), 128);
  EXPECT_EQ(padded_keys(7), 7);  // a row within one vector stays as it is
  EXPECT_EQ(padded_rows(197, 4), 200);
  EXPECT_EQ(padded_rows(128, 4), 128);
  EXPECT_EQ(padded_rows(1, 4), 1);  // one query (a decoder's step): one row
  const Shape qkv{2, 197, 16};
  const ir::Tensor q = ir::placeholder(qkv, "q"), k = ir::placeholder(qkv, "k"), v = ir::placeholder(qkv, "v");
  const Attrs attrs = AttentionAttrs{};  // the call holds it by reference
  const ir::ComputeDAG dag({find_operator("attention").compute({attrs, {qkv, qkv, qkv}, qkv, {}}, {q, k, v})});
  for (const ir::Tensor& t : dag.tensors())
    if (t->tag == "attention_scores") EXPECT_EQ(t->shape, (Shape{2, 200, 208}));
  EXPECT_EQ(dag.outputs()[0]->shape, qkv);
}

TEST(AttentionOperator, KeyTilesDivideTheRowPastAWholeRowOfKeys) {
  EXPECT_EQ(key_tile(128, 0), 128);   // a whole row up to kWholeRowKeys
  EXPECT_EQ(key_tile(256, 0), 256);
  EXPECT_EQ(key_tile(512, 0), 256);   // two tiles
  EXPECT_EQ(key_tile(300, 0), 150);
  EXPECT_EQ(key_tile(509, 0), 509);   // a prime: one tile
  EXPECT_EQ(key_tile(24, 8), 8);      // as given, where it divides
  EXPECT_EQ(key_tile(24, 7), 24);
}

TEST(AttentionOperator, RefusesShapesThatDoNotFit) {
  const Operator& op = find_operator("attention");
  EXPECT_THROW(op.infer_shape({{2, 4, 8}, {2, 5, 8}, {2, 5, 7}}, AttentionAttrs{}), Error);  // v's D
  EXPECT_THROW(op.infer_shape({{3, 4, 8}, {3, 5, 8}, {3, 5, 8}}, AttentionAttrs{1.0, 2}), Error);  // heads
  EXPECT_THROW(op.infer_shape({{2, 4, 8}, {2, 5, 8}, {2, 5, 8}, {1, 1, 3, 5}}, AttentionAttrs{1.0, 1, true}), Error);
  EXPECT_EQ(op.infer_shape({{2, 4, 8}, {2, 5, 8}, {2, 5, 8}, {2, 1, 1, 5}}, AttentionAttrs{1.0, 1, true}),
            (Shape{2, 4, 8}));
}

}  // namespace
}  // namespace tessera::ops
