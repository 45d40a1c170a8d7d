// The auto-scheduler on int8 convolutions: the sketch rule
// MultiLevelTilingWithByteDotProduct keeps the 4 bytes of a lane and the
// lanes whole and innermost, so that every candidate computes its products
// with the target's byte dot product (vpdpbusd, vpmaddubsw) and equals the
// integer reference exactly, whatever its tiles.
#include <gtest/gtest.h>

#include <random>
#include <regex>

#include "autoschedule/generate_sketches.h"
#include "autoschedule/random_annotation.h"
#include "autoschedule/stage_analysis.h"
#include "compile/build.h"
#include "schedule/state.h"
#include "testing/qlinear_conv_case.h"

namespace tessera::autoschedule {
namespace {

using testing::QLinearConvCase;

std::vector<QLinearConvCase> convolutions(int64_t block) {
  return {
      {{1, 32, 14, 14}, 2 * block, 3, ops::Conv2dAttrs::symmetric(1, 1), 16, block},  // padded: data_pad
      {{1, 16, 15, 15}, block, 3, ops::Conv2dAttrs::symmetric(2, 1), 8, block},       // stride 2, odd width
      {{1, 64, 7, 7}, 2 * block, 1, ops::Conv2dAttrs::symmetric(1, 0), 16, block},    // flattened positions
  };
}

TEST(SketchGeneration, Int8ConvolutionsFindTheirByteDotProduct) {
  const ir::ComputeDAG dag = testing::qlinear_conv_dag(convolutions(16)[0]);
  const schedule::State state(dag);
  int conv = -1, pad = -1;
  for (size_t i = 0; i < state.stages().size(); ++i) {
    if (state.stages()[i].tensor->tag == "qlinear_conv2d_nchwc") conv = static_cast<int>(i);
    if (state.stages()[i].tensor->tag == "pad") pad = static_cast<int>(i);
  }
  ASSERT_GE(conv, 0);
  ASSERT_GE(pad, 0);
  const auto axes = byte_dot_product_axes(state, conv);
  ASSERT_TRUE(axes);
  EXPECT_EQ(axes->lanes, "oc_block");
  EXPECT_EQ(axes->bytes, "ic_4");
  EXPECT_EQ(axes->unsigned_operand, state.stages()[pad].tensor);
  // The padding is the instruction's operand: loaded as stored, not inlined.
  EXPECT_FALSE(is_strictly_inlineable(state, pad));
  // The requantization is no byte product; an fp32 conv is none either.
  EXPECT_FALSE(byte_dot_product_axes(state, static_cast<int>(state.stages().size()) - 1));
}

TEST(SketchGeneration, Int8ConvolutionsAreTiledAroundTheByteDotProduct) {
  const ir::ComputeDAG dag = testing::qlinear_conv_dag(convolutions(16)[0]);
  const auto sketches = generate_sketches(dag, SketchContext{target::Target::host(), 2});
  // Fused into the requantization at levels 1 and 2.
  ASSERT_EQ(sketches.size(), 2u) << sketches[0].print();
  for (const Sketch& s : sketches) {
    const std::string text = s.print();
    EXPECT_NE(text.find("around the byte dot product"), std::string::npos) << text;
    EXPECT_NE(text.find("dot_product"), std::string::npos) << text;
    EXPECT_EQ(text.find(": inlined"), std::string::npos) << text;  // the padding stays a stage
  }
}

// Every sketch, randomly annotated, on each ISA: the instruction in the
// assembly, and where this host runs it the integer reference's values
// exactly (weights within what the instruction computes exactly).
TEST(SketchGeneration, EveryInt8CandidateUsesTheInstructionAndIsExact) {
  struct Isa {
    const char* target;
    const char* instruction;
    int64_t block;
    bool centered = false;  // then weights across all of int8
  };
  std::mt19937_64 rng(5);
  int ran = 0;  // candidates this host ran (every x86-64 CI host runs haswell's)
  for (const Isa& isa : {Isa{"llvm -mcpu=sapphirerapids", R"(vpdpbusd\s+.*%zmm)", 16},
                         Isa{"llvm -mcpu=alderlake", R"(\{vex\}\s*vpdpbusd\s+.*%ymm)", 8},
                         Isa{"llvm -mcpu=haswell", R"(vpmaddubsw\s+.*%ymm)", 8},
                         Isa{"llvm -mcpu=haswell", R"(vpsignb\s+.*%ymm[\s\S]*vpmaddubsw\s+.*%ymm)", 8, true}}) {
    const target::Target target = target::Target::parse(isa.target);
    const int most = isa.centered ? 128 : build::int8_weight_limit(target);
    for (QLinearConvCase c : convolutions(isa.block)) {
      c.centered = isa.centered;
      const ir::ComputeDAG dag = testing::qlinear_conv_dag(c);
      for (int threads : {1, 2}) {
        const SketchContext ctx{target, threads};
        const auto sketches = generate_sketches(dag, ctx);
        ASSERT_FALSE(sketches.empty());
        for (const Sketch& sketch : sketches) {
          const schedule::Trace trace = instantiate(sketch, random_params(sketch, ctx, rng));
          SCOPED_TRACE(std::string(isa.target) + " " + ops::shape_to_string(c.x) + " threads " +
                       std::to_string(threads) + ": " + trace.dump());
          const testing::QLinearConvRun run = testing::run_qlinear_conv(c, dag, trace, target, most, threads);
          EXPECT_TRUE(std::regex_search(run.assembly, std::regex(isa.instruction)));
          if (run.difference >= 0) EXPECT_EQ(run.difference, 0.0);
          ran += run.difference >= 0;
        }
      }
    }
  }
  EXPECT_GT(ran, 0);
}

}  // namespace
}  // namespace tessera::autoschedule
