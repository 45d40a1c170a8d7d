// The register tiles of a dense with packed weights (schedule/dense_pack_tile.h):
// where a block is wider than the accumulators hold for 6 rows (64 columns
// on AVX2's 16 registers), the hand-written plan tiles parts of it, and every
// part, with every parallel loop, row tile (a ragged one guarded) and K split,
// matches the reference, with and without an epilogue stage.
#include "schedule/dense_pack_tile.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "ops/workloads.h"
#include "testing/check.h"

namespace tessera::schedule {
namespace {

const VectorUnit kAvx2{.bits = 256, .registers = 16}, kAvx512{.bits = 512, .registers = 32};

TEST(DensePackTile, AWideBlockOnSixteenRegistersIsTiledInParts) {
  EXPECT_EQ(dense_pack_block_parts(64, kAvx2), (std::vector<int64_t>{32, 16, 8}));
  EXPECT_EQ(dense_pack_block_parts(64, kAvx512), (std::vector<int64_t>{32, 16}));
  EXPECT_EQ(dense_pack_block_parts(8, kAvx2), (std::vector<int64_t>{}));
  EXPECT_EQ(dense_pack_block_parts(40, kAvx2), (std::vector<int64_t>{}));  // 20 is no whole vectors

  // BERT's 128 tokens x 768 outputs in blocks of 64: 6 rows x 2 vectors of 16 columns,
  // not 1 row x 8 vectors.
  const DensePackPlan avx2 = dense_pack_default_plan(128, 3072, 12, 64, kAvx2);
  EXPECT_EQ(avx2.ty, 6);
  EXPECT_EQ(avx2.lanes, 16);
  EXPECT_EQ(avx2.tx, 1);
  // AVX-512 holds 6 rows of a whole block (4 vectors): as before.
  const DensePackPlan avx512 = dense_pack_default_plan(128, 3072, 12, 64, kAvx512);
  EXPECT_EQ(avx512.ty, 6);
  EXPECT_EQ(avx512.lanes, 0);
  // Two rows: the widest part that fits them (4 vectors).
  const DensePackPlan two_rows = dense_pack_default_plan(2, 64, 12, 64, kAvx2);
  EXPECT_EQ(two_rows.ty, 2);
  EXPECT_EQ(two_rows.lanes, 32);
  // Narrow blocks: whole blocks, several per tile.
  const DensePackPlan narrow = dense_pack_default_plan(128, 3072, 96, 8, kAvx2);
  EXPECT_EQ(narrow.ty, 6);
  EXPECT_EQ(narrow.lanes, 0);
  EXPECT_EQ(narrow.tx, 2);
  // One row (a classifier) keeps its row of whole blocks.
  EXPECT_EQ(dense_pack_default_plan(1, 512, 12, 64, kAvx2).lanes, 0);
}

// Column tiles run outermost in parallel where there are enough of them to
// share out; a few (a narrow N) over 2 threads leave one thread idle a third
// of the time, so with a weight that stays in L2 they fuse with the rows.
TEST(DensePackTile, FewColumnTilesRunFusedWithTheRows) {
  // ConvNeXt-T's 3136x384 -> 96 (3 blocks of 32) and 784x768 -> 192 (3 of 64).
  EXPECT_EQ(dense_pack_default_plan(3136, 384, 3, 32, kAvx512).parallel, "fused");
  EXPECT_EQ(dense_pack_default_plan(784, 768, 3, 64, kAvx512).parallel, "fused");
  EXPECT_EQ(dense_pack_default_plan(784, 768, 3, 64, kAvx2).parallel, "cols");  // in 16-column parts: 12 tiles
  // Its 196x1536 -> 384: 6 tiles, but 2.4 MB of weight, which row tiles
  // passing every column tile would stream from L3.
  EXPECT_EQ(dense_pack_default_plan(196, 1536, 6, 64, kAvx512).parallel, "cols");
  // BERT's 128x3072 -> 768: 12 tiles.
  EXPECT_EQ(dense_pack_default_plan(128, 3072, 12, 64, kAvx512).parallel, "cols");
}

TEST(DensePackTile, EveryPartOfABlockMatchesTheReference) {
  // 7 rows (a ragged tile of 6), 2 blocks of 64, K = 40.
  int n = 0;
  for (bool epilogue : {false, true}) {
    const ops::Workload w = ops::dense_pack_workload({7, 40}, {2, 40, 64}, ops::Epilogue{epilogue, false});
    for (int64_t lanes : {32, 16, 8})
      for (const char* parallel : {"fused", "rows", "cols"})
        for (int64_t ty : {1, 6}) {
          const DensePackPlan plan{.ty = ty,
                                   .tx = 1 + n % 2,
                                   .tk = n % 3 == 0 ? 8 : 1,
                                   .lanes = lanes,
                                   .unroll_k = n % 3 == 0,
                                   .parallel = parallel};
          ++n;
          const Trace trace = dense_pack_tile_trace(w.dag, plan);
          SCOPED_TRACE(trace.dump());
          const auto r = testing::check_schedule(w, trace, 2);
          EXPECT_LE(r.max_rel_error, 1e-5) << r.lowered;
          // The accumulator is the tile only: ty rows x `lanes` columns.
          const std::string tile = "[" + std::to_string(ty) + ", " + std::to_string(lanes) + "]";
          EXPECT_TRUE(std::regex_search(r.lowered, std::regex("allocate T_dense_pack(\\.local)?\\" + tile)))
              << r.lowered;
        }
  }
}

}  // namespace
}  // namespace tessera::schedule
