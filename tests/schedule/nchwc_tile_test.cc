// The default register tile follows the target's vector unit, and its code
// keeps every accumulator in a register on both widths (compiled for a CPU of
// each kind, whatever this host is).
#include <gtest/gtest.h>

#include <regex>

#include "codegen/llvm_codegen.h"
#include "target/target.h"
#include "ops/workloads.h"
#include "schedule/manual_schedule.h"
#include "schedule/nchwc_tile.h"
#include "tir/lower.h"

namespace tessera::schedule {
namespace {

constexpr VectorUnit kAvx2{.bits = 256, .registers = 16};
constexpr VectorUnit kAvx512{.bits = 512, .registers = 32};

TEST(ScheduleNchwcTile, Avx2TilesReuseEachBroadcastAcrossFourBlocks) {
  struct Case {
    int64_t chunks, width, oc, ow;
    const char* why;
  };
  for (const Case& c : {
           Case{8, 56, 4, 3, "12 accumulators + 3 live broadcasts + 1 weight = 16 ymm registers"},
           Case{2, 56, 2, 5, "two chunks: 2 x 5 accumulators + 5 broadcasts + 1 weight"},
           Case{1, 56, 1, 14, "one chunk: nothing to reuse a broadcast for; 14 accumulators"},
           Case{51, 196, 3, 3, "RegNet's 408 channels, which 3 divides, not 2: 3 x 3 + 3 broadcasts + 1 weight"},
           Case{114, 49, 2, 5, "912 channels: 2 stays first where it divides"},
           Case{8, 2, 4, 2, "narrow rows bound the tile"},
       }) {
    SCOPED_TRACE(c.why);
    const RegisterTile t = nchwc_register_tile(c.chunks, 8, c.width, kAvx2);
    EXPECT_EQ(t.oc, c.oc);
    EXPECT_EQ(t.ow, c.ow);
  }
}

// Grouped, a tile's blocks come from one group: blocks of different groups
// read different inputs and share no broadcast.
TEST(ScheduleNchwcTile, Avx2TilesStayWithinAGroup) {
  struct Case {
    int64_t chunks, group_chunks, width, oc, ow;
    const char* why;
  };
  for (const Case& c : {
           Case{16, 1, 56, 1, 14, "ResNeXt-50's first stage, groups of 4 merged into blocks of 8: one block a group"},
           Case{114, 3, 7, 3, 3, "RegNet's 912 channels, 38 groups of 3 blocks: 3, not 2 across two groups"},
           Case{128, 4, 7, 4, 3, "ResNeXt-50's last stage, groups of 32 channels: 4 blocks"},
           Case{8, 0, 56, 4, 3, "0: ungrouped"},
       }) {
    SCOPED_TRACE(c.why);
    const RegisterTile t = nchwc_register_tile(c.chunks, 8, c.width, kAvx2, c.group_chunks);
    EXPECT_EQ(t.oc, c.oc);
    EXPECT_EQ(t.ow, c.ow);
  }
  const auto grouped = [](int64_t groups) {
    return ops::conv2d_nchwc_workload({1, 16, 28, 28, 8}, {16, 16 / groups, 3, 3, 8, 8},
                                      ops::Conv2dAttrs::symmetric(1, 1, 1, groups));
  };
  for (const int64_t groups : {1, 4, 16}) {
    const ops::Workload w = grouped(groups);
    EXPECT_EQ(nchwc_chunks_per_group(stage_by_tag(w.dag, "conv2d_nchwc", "test")), 16 / groups) << groups;
  }
  // The hand-written schedule of a group a block: one block by 14 columns.
  const ops::Workload w = grouped(16);
  const Trace t = conv2d_nchwc_schedule(w.dag, kAvx2);
  EXPECT_NE(t.to_json().dump().find(R"("lengths":[14])"), std::string::npos) << t.to_json().dump();
}

TEST(ScheduleNchwcTile, Avx512TilesUseBroadcastOperandsAndDivideTheRow) {
  RegisterTile t = nchwc_register_tile(4, 16, 56, kAvx512);
  EXPECT_EQ(t.oc, 1);
  EXPECT_EQ(t.ow, 14);
  EXPECT_EQ(nchwc_register_tile(32, 16, 7, kAvx512).ow, 7);
  EXPECT_EQ(nchwc_register_tile(4, 16, 112, kAvx512).ow, 16);
}

// The hand-written conv schedule for each width, compiled for a CPU of that
// width: FMAs on registers of that width, and no vector register spilled to
// the stack.
TEST(ScheduleNchwcTile, HandWrittenConvKeepsAccumulatorsInRegisters) {
  struct Case {
    const char* target;
    VectorUnit unit;
    int64_t block;
    const char* reg;
  };
  for (const Case& c : {Case{"llvm -mcpu=haswell", kAvx2, 8, "ymm"}, Case{"llvm -mcpu=znver3", kAvx2, 8, "ymm"},
                        Case{"llvm -mcpu=skylake-avx512", kAvx512, 16, "zmm"}}) {
    SCOPED_TRACE(c.target);
    const target::Target target = target::Target::parse(c.target);
    EXPECT_EQ(target.vector_bits, c.unit.bits);
    EXPECT_EQ(target.vector_registers, c.unit.registers);
    // 64 channels (4 chunks per tile on AVX2), 3 chunks (one tile of 3 on
    // AVX2), and 64 in groups of a block each (a tile of one block, 14
    // columns on AVX2).
    for (const int64_t groups : {int64_t{1}, 64 / c.block})
      for (const int64_t chunks : {64 / c.block, int64_t{3}}) {
        if (groups > 1 && chunks != groups) continue;
        SCOPED_TRACE(std::to_string(chunks) + " chunks, " + std::to_string(groups) + " groups");
        ops::Workload w =
            ops::conv2d_nchwc_workload({1, chunks, 56, 56, c.block}, {chunks, chunks / groups, 3, 3, c.block, c.block},
                                       ops::Conv2dAttrs::symmetric(1, 1, 1, groups));
        tir::LoweredFunc f = tir::lower(w.dag, conv2d_nchwc_schedule(w.dag, target.vector_unit()), "conv");
        const std::string assembly = codegen::emit_assembly(f, target);
        EXPECT_TRUE(std::regex_search(assembly, std::regex(std::string(R"(vfmadd\w+\s+.*%)") + c.reg)));
        const std::regex spill(R"(vmov\w+\s+%[yz]mm\d+, -?\d*\(%rsp)");
        EXPECT_FALSE(std::regex_search(assembly, spill)) << assembly;
      }
  }
}

// 1x1 kernels over flattened positions buffer groups of positions when a
// register tile's weights outgrow L1 (1024 input channels), not when they fit
// (64).
TEST(ScheduleNchwcTile, WideOneByOneKernelsAccumulateInABufferOfPositions) {
  for (const VectorUnit& unit : {kAvx2, kAvx512}) {
    const int64_t block = unit.bits / 32;
    auto buffer_of = [&](int64_t in, int64_t out, int64_t size) {
      ops::Workload w = ops::conv2d_nchwc_workload({1, in / block, size, size, block},
                                                   {out / block, in / block, 1, 1, block, block},
                                                   ops::Conv2dAttrs::symmetric(1, 0));
      for (const auto& t : w.dag.tensors())
        if (t->tag == "conv2d_nchwc")
          return default_accumulator_buffer(t, nchwc_register_tile(t->shape[1], t->shape[4], t->shape[3], unit));
      return AccumulatorBuffer{.rows = -1};
    };
    const AccumulatorBuffer wide = buffer_of(1024, 256, 14);
    EXPECT_EQ(wide.rows, 1);
    EXPECT_EQ(wide.cols, 98);  // the largest divisor of 196 positions up to 128
    EXPECT_EQ(wide.ic_blocks, 8);
    EXPECT_EQ(buffer_of(64, 64, 56).rows, 0);
  }
}

TEST(ScheduleNchwcTile, AccumulatorRowsOfferDivisorsUpTo256Positions) {
  EXPECT_EQ(accumulator_row_choices(7, 7), (std::vector<int64_t>{1, 7}));
  EXPECT_EQ(accumulator_row_choices(14, 14), (std::vector<int64_t>{1, 2, 7, 14}));
  EXPECT_EQ(accumulator_row_choices(56, 56), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_TRUE(accumulator_row_choices(3, 300).empty());
}

// The hand-written schedule buffers rows where a register tile's weights
// outgrow L2 (ResNet's 512-channel 7x7 layer), not where they are small; the
// buffered tile's accumulators still live in registers across the reduction
// (no multiply-add reads its accumulator from the stack), on both widths.
TEST(ScheduleNchwcTile, LargeWeightsAccumulateInABufferOfRows) {
  struct Case {
    const char* target;
    int64_t block;
  };
  for (const Case& c : {Case{"llvm -mcpu=haswell", 8}, Case{"llvm -mcpu=skylake-avx512", 16}}) {
    SCOPED_TRACE(c.target);
    const target::Target target = target::Target::parse(c.target);
    auto workload = [&](int64_t channels, int64_t size) {
      const int64_t chunks = channels / c.block;
      return ops::conv2d_nchwc_workload({1, chunks, size, size, c.block}, {chunks, chunks, 3, 3, c.block, c.block},
                                        ops::Conv2dAttrs::symmetric(1, 1));
    };
    auto rows_of = [&](const ops::Workload& w) {
      for (const auto& t : w.dag.tensors())
        if (t->tag == "conv2d_nchwc") {
          const RegisterTile tile = nchwc_register_tile(t->shape[1], t->shape[4], t->shape[3], target.vector_unit());
          return default_accumulator_buffer(t, tile).rows;
        }
      return int64_t{-1};
    };
    EXPECT_EQ(rows_of(workload(64, 56)), 0);
    const ops::Workload large = workload(512, 7);
    EXPECT_EQ(rows_of(large), 7);
    tir::LoweredFunc f = tir::lower(large.dag, conv2d_nchwc_schedule(large.dag, target.vector_unit()), "conv");
    const std::string assembly = codegen::emit_assembly(f, target);
    EXPECT_TRUE(std::regex_search(assembly, std::regex(R"(vfmadd\w+\s+.*%[yz]mm)")));
    EXPECT_FALSE(std::regex_search(assembly, std::regex(R"(vfmadd\w+\s+-?\d*\(%rsp[^)]*\), )"))) << assembly;
  }
}

}  // namespace
}  // namespace tessera::schedule
