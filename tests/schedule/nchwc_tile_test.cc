// The default register tile follows the target's vector unit, and its code
// keeps every accumulator in a register on both widths (compiled for a CPU of
// each kind, whatever this host is).
#include <gtest/gtest.h>

#include <regex>

#include "codegen/llvm_codegen.h"
#include "codegen/target.h"
#include "ops/workloads.h"
#include "schedule/manual_schedule.h"
#include "schedule/nchwc_tile.h"
#include "tir/lower.h"

namespace tessera::schedule {
namespace {

constexpr VectorUnit kAvx2{.bits = 256, .registers = 16};
constexpr VectorUnit kAvx512{.bits = 512, .registers = 32};

TEST(ScheduleNchwcTile, Avx2TilesReuseEachBroadcastAcrossFourBlocks) {
  // 12 accumulators + 3 live broadcasts + 1 weight = 16 ymm registers.
  RegisterTile t = nchwc_register_tile(8, 8, 56, kAvx2);
  EXPECT_EQ(t.oc, 4);
  EXPECT_EQ(t.ow, 3);
  // Two chunks: 2 x 5 accumulators + 5 broadcasts + 1 weight.
  t = nchwc_register_tile(2, 8, 56, kAvx2);
  EXPECT_EQ(t.oc, 2);
  EXPECT_EQ(t.ow, 5);
  // One chunk: nothing to reuse a broadcast for; 14 accumulators.
  t = nchwc_register_tile(1, 8, 56, kAvx2);
  EXPECT_EQ(t.oc, 1);
  EXPECT_EQ(t.ow, 14);
  // Narrow rows bound the tile.
  EXPECT_EQ(nchwc_register_tile(8, 8, 2, kAvx2).ow, 2);
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
    const codegen::Target target = codegen::Target::parse(c.target);
    EXPECT_EQ(target.vector_bits, c.unit.bits);
    EXPECT_EQ(target.vector_registers, c.unit.registers);
    const int64_t chunks = 64 / c.block;
    ops::Workload w = ops::conv2d_nchwc_workload({1, chunks, 56, 56, c.block}, {chunks, chunks, 3, 3, c.block, c.block},
                                                 ops::Conv2dAttrs::symmetric(1, 1));
    tir::LoweredFunc f = tir::lower(w.dag, conv2d_nchwc_schedule(w.dag, target.vector_unit()), "conv");
    const std::string assembly = codegen::emit_assembly(f, target);
    EXPECT_TRUE(std::regex_search(assembly, std::regex(std::string(R"(vfmadd\w+\s+.*%)") + c.reg)));
    const std::regex spill(R"(vmov\w+\s+%[yz]mm\d+, -?\d*\(%rsp)");
    EXPECT_FALSE(std::regex_search(assembly, spill)) << assembly;
  }
}

}  // namespace
}  // namespace tessera::schedule
