// The CPU sketch rules on the DAGs the issue names: how many sketches each
// DAG gets and which rules made them, and that every sketch, randomly
// annotated, lowers, compiles and matches the operator's reference.
#include "autoschedule/generate_sketches.h"

#include <gtest/gtest.h>

#include <random>

#include "autoschedule/random_annotation.h"
#include "autoschedule/stage_analysis.h"
#include "ops/workloads.h"
#include "testing/check.h"
#include "tessera/error.h"

namespace tessera::autoschedule {
namespace {

struct Case {
  std::string name;
  ops::Workload workload;
  size_t sketches;  // expected count
};

std::vector<Case> cases() {
  const auto pad1 = ops::Conv2dAttrs::symmetric(1, 1);
  const ops::Epilogue bias_relu{.bias = true, .relu = true};
  return {
      // output conv: cache write + fusion at levels 1 and 2, or plain tiling
      {"conv2d_nchw", ops::conv2d_nchw_workload({1, 8, 10, 10}, {16, 8, 3, 3}, pad1), 3},
      // bias and relu inlined into one consumer: fusion at levels 1 and 2
      {"conv2d_nchw_bias_relu", ops::conv2d_nchw_workload({1, 8, 10, 10}, {16, 8, 3, 3}, pad1, bias_relu), 2},
      {"conv2d_nhwc", ops::conv2d_nhwc_workload({1, 10, 10, 8}, {3, 3, 8, 16}, ops::Conv2dAttrs::symmetric(2, 1)), 3},
      {"depthwise_nchw", ops::depthwise_conv2d_nchw_workload({1, 16, 12, 12}, {16, 1, 3, 3}, pad1, bias_relu), 2},
      {"depthwise_nhwc", ops::depthwise_conv2d_nhwc_workload({1, 12, 12, 16}, {3, 3, 1, 16}, pad1, bias_relu), 2},
      // weight[j, k] is read along j, the vector axis, and reused by 4 rows:
      // each sketch also with a cache read of it, j last
      {"dense", ops::dense_workload({4, 64}, {48, 64}), 6},
      {"dense_bias_relu", ops::dense_workload({4, 64}, {48, 64}, bias_relu), 4},
      // one row: the copy would not pay
      {"dense_one_row", ops::dense_workload({1, 64}, {48, 64}), 3},
      // B transposed in the kernel (a layout copy, never inlined) is read
      // contiguously along j: no cache read, the three tilings alone
      {"batch_matmul", ops::batch_matmul_workload({2, 12, 32}, {2, 20, 32}), 3},
      // row reductions without reuse, each rfactored or not: 2 x 2
      {"softmax", ops::softmax_workload({6, 100}), 4},
      // rows of 64 fill two vectors on every x86 target: factored over w, h stays a reduction of the rf stage
      {"global_avg_pool_long_rows", ops::global_avg_pool2d_workload({1, 4, 3, 64}), 2},
  };
}

SketchContext context(int threads) { return SketchContext{target::Target::host(), threads}; }

TEST(SketchGeneration, CountsPerDag) {
  for (const auto& c : cases()) {
    const auto sketches = generate_sketches(c.workload.dag, context(2));
    ASSERT_EQ(sketches.size(), c.sketches) << c.name << ":\n" << (sketches.empty() ? "" : sketches[0].print());
  }
}

TEST(SketchGeneration, OutputConvolutionGetsCacheWriteFusionAndPlainTiling) {
  const auto sketches = generate_sketches(cases()[0].workload.dag, context(2));
  ASSERT_EQ(sketches.size(), 3u);
  auto rules = [&](size_t i) {
    std::string s;
    for (const auto& r : sketches[i].rules) s += r + "; ";
    return s;
  };
  // Inlined padding, then the rules in the order they are tried.
  EXPECT_NE(rules(0).find("cache write"), std::string::npos) << rules(0);
  EXPECT_NE(rules(0).find("level-1 tiles"), std::string::npos) << rules(0);
  EXPECT_NE(rules(1).find("level-2 tiles"), std::string::npos) << rules(1);
  EXPECT_EQ(rules(2).find("cache write"), std::string::npos) << rules(2);
  EXPECT_NE(rules(2).find("multi-level tiling"), std::string::npos) << rules(2);
  for (size_t i = 0; i < 3; ++i) EXPECT_NE(rules(i).find("inlined"), std::string::npos) << rules(i);
  // Spatial axes (n, c, h, w) split in 4, reduce axes (rc, ry, rx) in 2.
  EXPECT_EQ(sketches[2].tiles.size(), 7u);
  EXPECT_NE(sketches[2].print().find("[?, ?, ?]"), std::string::npos);
}

TEST(SketchGeneration, RowReductionsAreRfactoredIntoVectorsOfPartialResults) {
  const auto sketches = generate_sketches(ops::softmax_workload({6, 100}).dag, context(2));
  ASSERT_EQ(sketches.size(), 4u);
  const std::string both = sketches[0].print(), none = sketches[3].print();
  for (const char* stage : {"T_softmax_maxelem", "T_softmax_expsum"}) {
    EXPECT_NE(both.find(std::string("rfactor ") + stage + " k by the product of tile"), std::string::npos) << both;
    EXPECT_NE(both.find(std::string("vectorize? ") + stage + ".rf k_i.1"), std::string::npos) << both;
    EXPECT_NE(both.find(std::string("parallel? ") + stage + ".rf fusing some of [i0, k_i.0]"), std::string::npos)
        << both;
  }
  EXPECT_EQ(none.find("rfactor"), std::string::npos) << none;
  // A short reduce axis (7 < two vectors) is not worth factoring.
  for (const auto& sk : generate_sketches(ops::global_avg_pool2d_workload({1, 32, 7, 7}).dag, context(2)))
    EXPECT_EQ(sk.print().find("rfactor"), std::string::npos) << sk.print();
}

TEST(SketchGeneration, StridedReusedInputsAreReadFromACopyWithTheVectorAxisLast) {
  const auto sketches = generate_sketches(ops::dense_workload({4, 64}, {48, 64}).dag, context(2));
  ASSERT_EQ(sketches.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    const std::string text = sketches[i].print();
    const bool cached = text.find("cache_read T_dense weight [1,0]") != std::string::npos;
    EXPECT_EQ(cached, i < 3) << text;
    if (cached) EXPECT_NE(text.find("compute location? weight.cache: root or at T_dense"), std::string::npos) << text;
  }
}

TEST(StageAnalysis, ReuseAndElementwiseConsumers) {
  const ops::Workload conv = cases()[1].workload;  // pad -> conv -> bias -> relu
  const schedule::State state(conv.dag);
  int conv_stage = -1;
  for (size_t i = 0; i < state.stages().size(); ++i)
    if (state.stages()[i].tensor->is_reduction()) conv_stage = static_cast<int>(i);
  ASSERT_GE(conv_stage, 0);
  EXPECT_TRUE(needs_multi_level_tiling(state, conv_stage));
  // bias_add reads the convolution elementwise, but it is not inlined yet:
  // the matched consumer is bias_add itself.
  EXPECT_EQ(elementwise_matched_consumer(state, conv_stage), conv_stage + 1);
  EXPECT_FALSE(is_strictly_inlineable(state, static_cast<int>(state.stages().size()) - 1));  // the output

  const schedule::State s2(ops::softmax_workload({6, 100}).dag);
  for (size_t i = 0; i < s2.stages().size(); ++i) EXPECT_FALSE(needs_multi_level_tiling(s2, static_cast<int>(i)));
}

// Padding reads its input once per element: inlined. Winograd's input
// transform reads 16 padded elements per element: inlined into the batched
// GEMM it would be recomputed for every output channel block.
TEST(StageAnalysis, StencilsAreNotStrictlyInlineable) {
  const auto w = ops::conv2d_winograd_nchwc_workload({1, 2, 8, 8, 8}, {16, 2, 2, 8, 8},
                                                     ops::Conv2dAttrs::symmetric(1, 1), 2);
  const schedule::State state(w.dag);
  EXPECT_TRUE(is_strictly_inlineable(state, state.stage_index("data_pad")));
  EXPECT_FALSE(is_strictly_inlineable(state, state.stage_index("winograd_data_pack")));
}

TEST(RandomAnnotation, FactorizationsAreEveryTupleThatDivides) {
  for (int64_t extent : {1, 12, 64, 97, 128}) {
    for (int count : {1, 3}) {
      size_t brute = 0;
      const int64_t limit = extent;
      for (int64_t a = 1; a <= limit; ++a)
        for (int64_t b = 1; b <= (count == 3 ? limit : 1); ++b)
          for (int64_t c = 1; c <= (count == 3 ? limit : 1); ++c) {
            const int64_t last = count == 3 ? c : a;
            if (extent % (a * b * c) == 0 && last <= kMaxInnermostFactor) ++brute;
          }
      const auto& f = factorizations(extent, count);
      EXPECT_EQ(f.size(), brute) << extent << " " << count;
      for (const auto& t : f) {
        int64_t p = 1;
        for (int64_t l : t) p *= l;
        EXPECT_EQ(extent % p, 0);
      }
    }
  }
}

TEST(RandomAnnotation, ParamsThatDoNotFitTheSketchAreRefused) {
  const auto sketches = generate_sketches(cases()[4].workload.dag, context(2));
  std::mt19937_64 rng(1);
  SketchParams p = random_params(sketches[0], context(2), rng);
  EXPECT_NO_THROW(check_params(sketches[0], p));
  SketchParams bad = p;
  bad.tiles[0] = {3, 1, 1};  // 3 does not divide 4
  EXPECT_THROW(check_params(sketches[0], bad), Error);
  bad = p;
  bad.tiles.pop_back();
  EXPECT_THROW(check_params(sketches[0], bad), Error);
  bad = p;
  if (!bad.unroll.empty()) {
    bad.unroll[0] = 7;
    EXPECT_THROW(check_params(sketches[0], bad), Error);
  }
}

// The test: every sketch of every rule, on every DAG, lowers and
// matches the reference, for several random annotations, at 1 and 2 threads.
TEST(SketchGeneration, EveryRandomlyAnnotatedSketchMatchesTheReference) {
  std::mt19937_64 rng(7);
  for (const auto& c : cases()) {
    for (int threads : {1, 2}) {
      const SketchContext ctx = context(threads);
      const auto sketches = generate_sketches(c.workload.dag, ctx);
      for (size_t s = 0; s < sketches.size(); ++s) {
        for (int k = 0; k < 2; ++k) {
          const SketchParams p = random_params(sketches[s], ctx, rng);
          const schedule::Trace trace = instantiate(sketches[s], p);
          SCOPED_TRACE(c.name + " sketch " + std::to_string(s) + " threads " + std::to_string(threads) + ": " +
                       trace.dump());
          testing::CheckResult r;
          ASSERT_NO_THROW(r = testing::check_schedule(c.workload, trace, threads));
          EXPECT_LT(r.max_rel_error, 1e-4) << r.lowered;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::autoschedule
