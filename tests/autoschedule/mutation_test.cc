// Mutations and crossover keep a candidate a valid schedule of its sketch:
// thousands of edits pass check_params and replay, and a sample of the
// results still computes the operator's reference.
#include "autoschedule/mutation.h"

#include <gtest/gtest.h>

#include <random>

#include "autoschedule/generate_sketches.h"
#include "autoschedule/random_annotation.h"
#include "ops/workloads.h"
#include "testing/check.h"

namespace tessera::autoschedule {
namespace {

const MutationKind kKinds[] = {MutationKind::TileSize, MutationKind::AutoUnroll, MutationKind::Parallel,
                               MutationKind::ComputeLocation};

TEST(Mutation, EditsKeepCandidatesValidAndCorrect) {
  const ops::Epilogue bias_relu{.bias = true, .relu = true};
  const std::vector<ops::Workload> workloads = {
      ops::conv2d_nchw_workload({1, 8, 10, 10}, {16, 8, 3, 3}, ops::Conv2dAttrs::symmetric(1, 1), bias_relu),
      ops::dense_workload({4, 64}, {48, 64}),
      ops::softmax_workload({6, 100}),
  };
  const SketchContext ctx{target::Target::host(), 2};
  std::mt19937_64 rng(3);
  for (const auto& w : workloads) {
    for (const auto& sketch : generate_sketches(w.dag, ctx)) {
      SketchParams a = random_params(sketch, ctx, rng), b = random_params(sketch, ctx, rng);
      int changed = 0;
      for (int step = 0; step < 300; ++step) {
        SketchParams& p = step % 2 ? a : b;
        const SketchParams before = p;
        if (mutate(kKinds[step % 4], sketch, p, rng)) {
          ++changed;
          // A mutation of tiles may leave them as they were only when it moved nothing (never).
          if (kKinds[step % 4] != MutationKind::TileSize) EXPECT_FALSE(p == before);
        }
        ASSERT_NO_THROW(check_params(sketch, p));
        if (step % 10 == 0) {
          const SketchParams child = crossover(sketch, a, b, rng);
          ASSERT_NO_THROW(check_params(sketch, child));
          ASSERT_NO_THROW(instantiate(sketch, child).replay(w.dag));
        }
      }
      EXPECT_GT(changed, 0) << sketch.print();
      for (const SketchParams& p : {a, b}) {
        const schedule::Trace trace = instantiate(sketch, p);
        SCOPED_TRACE(trace.dump());
        testing::CheckResult r;
        ASSERT_NO_THROW(r = testing::check_schedule(w, trace, 2));
        EXPECT_LT(r.max_rel_error, 1e-4) << r.lowered;
      }
    }
  }
}

TEST(Mutation, TileSizeMovesAFactorAndKeepsTheProduct) {
  const ops::Workload w = ops::dense_workload({8, 64}, {48, 64});
  const SketchContext ctx{target::Target::host(), 1};
  const auto sketches = generate_sketches(w.dag, ctx);
  std::mt19937_64 rng(5);
  SketchParams p = random_params(sketches.back(), ctx, rng);
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(mutate_tile_size(sketches.back(), p, rng));
    for (size_t s = 0; s < p.tiles.size(); ++s) {
      int64_t product = 1;
      for (int64_t l : p.tiles[s]) product *= l;
      EXPECT_EQ(sketches.back().tiles[s].extent % product, 0);
      EXPECT_LE(p.tiles[s].back(), kMaxInnermostFactor);
    }
  }
}

}  // namespace
}  // namespace tessera::autoschedule
