#include <gtest/gtest.h>

#include "codegen/llvm_codegen.h"
#include "ops/workloads.h"
#include "schedule/default_schedule.h"
#include "schedule/manual_schedule.h"
#include "testing/check.h"
#include "tessera/error.h"
#include "tir/lower.h"
#include "tir/printer.h"

namespace tessera::schedule {
namespace {

ops::Workload conv_nchwc() {
  return ops::conv2d_nchwc_workload({1, 2, 10, 10, 8}, {2, 2, 3, 3, 8, 16}, ops::Conv2dAttrs::symmetric(1, 1),
                                    ops::Epilogue{true, true});
}

TEST(ScheduleTrace, JsonRoundTripReproducesTheIdenticalKernel) {
  auto w = conv_nchwc();
  Trace original = conv2d_nchwc_schedule(w.dag, {.bits = 512, .registers = 32});
  original.pragma("T_relu", "ax0@ax1@ax2", "auto_unroll_max_step$8");
  std::string text = original.dump();
  Trace again = Trace::parse(text);
  EXPECT_EQ(again.dump(), text);
  auto target = target::Target::host();
  auto f1 = tir::lower(w.dag, original), f2 = tir::lower(w.dag, again);
  EXPECT_EQ(tir::to_string(f1), tir::to_string(f2));
  EXPECT_EQ(codegen::emit_llvm_ir(f1, target), codegen::emit_llvm_ir(f2, target));
}

TEST(ScheduleTrace, EveryStepKindSurvivesJson) {
  Trace t;
  t.split("C", "i", {4, 2}).reorder("C", {"i.0", "i.2", "i.1"}).fuse("C", {"i.0", "i.2"});
  t.annotate("C", "i.1", Annotation::Vectorize).parallel("C", "x").unroll("C", "y");
  t.compute_at("B", "C", "x").compute_inline("A").compute_root("B").cache_write("C");
  t.rfactor("D", "k", 4).cache_read("D", "W", {1, 0});
  t.pragma("C", "x", "auto_unroll_max_step$16");
  t.bind("C", "x", Annotation::BlockX).bind("C", "y", Annotation::ThreadY).bind("C", "z", Annotation::VThread);
  t.cache_read("D", "A", {0, 1}, "shared").cache_write("E", "local");
  t.rfactor("F", "k", 2, /*by_range=*/true).cache_read("F", "B", {0, 1}, "shared", "float16");
  Trace back = Trace::from_json(t.to_json());
  ASSERT_EQ(back.steps().size(), t.steps().size());
  EXPECT_EQ(back.dump(), t.dump());
}

TEST(ScheduleTrace, ReplayBuildsTheExpectedLoops) {
  auto w = conv_nchwc();
  State s = conv2d_nchwc_schedule(w.dag, {.bits = 512, .registers = 32}).replay(w.dag);
  const Stage& local = s.stage("conv2d_NCHWc");
  std::vector<std::string> order;
  for (const auto& it : local.iters) order.push_back(it.name);
  EXPECT_EQ(order, (std::vector<std::string>{"n", "oc_chunk", "oh", "ic_outer", "ry", "rx", "ic_inner", "ow", "oc_block"}));
  EXPECT_EQ(local.location, Location::At);
  EXPECT_EQ(local.attach_stage, "T_relu");
  EXPECT_EQ(local.iters.back().annotation, Annotation::Vectorize);
}

TEST(ScheduleTrace, SplitRecordsGuardOnlyWhenNotDivisible) {
  auto w = ops::dense_workload({4, 8}, {10, 8});
  Trace even, uneven;
  even.split("T_dense", "j", {5});
  uneven.split("T_dense", "j", {4});
  EXPECT_TRUE(even.replay(w.dag).stage("T_dense").guards.empty());
  const Stage& s = uneven.replay(w.dag).stage("T_dense");
  ASSERT_EQ(s.guards.size(), 1u);
  EXPECT_EQ(s.iters[s.iter_index("j.0")].extent, 3);
}

TEST(ScheduleTrace, BadStepsAreErrorsThatNameTheirInput) {
  auto w = ops::dense_workload({4, 8}, {10, 8});
  auto message = [&](const Trace& t) {
    try {
      t.replay(w.dag);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(Trace().split("T_dense", "q", {2})).find("no iterator 'q'"), std::string::npos);
  EXPECT_NE(message(Trace().split("nothing", "i", {2})).find("no stage named 'nothing'"), std::string::npos);
  EXPECT_NE(message(Trace().split("T_dense", "i", {0})).find("not positive"), std::string::npos);
  EXPECT_NE(message(Trace().reorder("T_dense", {"i", "i", "k"})).find("given twice"), std::string::npos);
  EXPECT_NE(message(Trace().compute_inline("T_dense")).find("reduction"), std::string::npos);
  EXPECT_NE(message(Trace().split("T_dense", "i", {2}).cache_write("T_dense")).find("before its loops"),
            std::string::npos);
  EXPECT_NE(message(Trace().rfactor("T_dense", "k", 3)).find("factor 3 does not divide the extent 8 of 'k'"),
            std::string::npos);
  EXPECT_NE(message(Trace().rfactor("T_dense", "i", 2)).find("no reduce axis 'i' (it has k)"), std::string::npos);
  EXPECT_NE(message(Trace().split("T_dense", "k", {2}).rfactor("T_dense", "k", 2)).find("before its loops"),
            std::string::npos);
  EXPECT_NE(message(Trace().cache_read("T_dense", "bias", {0})).find("does not read it"), std::string::npos);
  EXPECT_NE(message(Trace().cache_read("T_dense", "weight", {0, 0})).find("layout must order the tensor's 2"),
            std::string::npos);
  EXPECT_NE(message(Trace().cache_read("T_dense", "weight", {1, 0}).cache_read("T_dense", "weight", {1, 0}))
                .find("does not read it"),
            std::string::npos);
  EXPECT_NE(message(Trace().pragma("T_dense", "i", "unroll_everything")).find("unknown pragma"), std::string::npos);
  EXPECT_NE(message(Trace().bind("T_dense", "k", Annotation::BlockX)).find("a reduce iterator cannot be spread"),
            std::string::npos);
  EXPECT_NE(message(Trace().bind("T_dense", "i", Annotation::ThreadX).bind("T_dense", "j", Annotation::ThreadX))
                .find("T_dense.i is bound to it already"),
            std::string::npos);
  EXPECT_NE(message(Trace().cache_read("T_dense", "weight", {0, 1}, "texture")).find("unknown scope 'texture'"),
            std::string::npos);
  EXPECT_THROW(Trace().bind("T_dense", "i", Annotation::Parallel), Error);
  EXPECT_THROW(Trace::parse(R"([{"step": "annotate", "stage": "T_dense", "iter": "i", "annotation": "warp.x"}])"),
               Error);
  EXPECT_THROW(Trace::parse("{not json"), Error);
  EXPECT_THROW(Trace::parse(R"([{"step": "split", "stage": "T_dense"}])"), Error);
  EXPECT_THROW(Trace::parse(R"([{"step": "teleport", "stage": "T_dense"}])"), Error);
}

// rfactor: the partial sums of k_i are independent, so they may run in
// parallel (a reduce loop may not); the result is still the dense product.
TEST(ScheduleTrace, RfactorSplitsAReductionIntoIndependentPartialResults) {
  auto w = ops::dense_workload({2, 64}, {3, 64});
  Trace t;
  t.rfactor("T_dense", "k", 16).reorder("T_dense.rf", {"k_i", "i", "j", "k_o"}).parallel("T_dense.rf", "k_i");
  State s = t.replay(w.dag);
  EXPECT_EQ(s.print(), "T_dense.rf: k_i[16]{parallel} i[2] j[3] k_o[4]r\nT_dense: i[2] j[3] k_i[16]r\n");
  const auto r = testing::check_schedule(w, t, 2);
  EXPECT_LT(r.max_rel_error, 1e-5) << r.lowered;
  EXPECT_THROW(Trace().rfactor("T_dense", "k", 16).parallel("T_dense", "k_i").replay(w.dag), Error);
}

// rfactor by range (split-K): partial k_i sums the k_i-th quarter of k and
// is the rf stage's first axis; a reduce loop still may not run in parallel.
TEST(ScheduleTrace, RfactorByRangeSumsConsecutiveRangesFirstAxisFirst) {
  auto w = ops::dense_workload({2, 64}, {3, 64});
  Trace t;
  t.rfactor("T_dense", "k", 4, /*by_range=*/true).parallel("T_dense.rf", "k_i");
  State s = t.replay(w.dag);
  EXPECT_EQ(s.print(), "T_dense.rf: k_i[4]{parallel} i[2] j[3] k_o[16]r\nT_dense: i[2] j[3] k_i[4]r\n");
  const auto r = testing::check_schedule(w, t, 2);
  EXPECT_LT(r.max_rel_error, 1e-5) << r.lowered;
  // Partial 1 reads k = 16..31: data[i, k_i * 16 + k_o].
  EXPECT_NE(r.lowered.find("((k_i*16) + k_o)"), std::string::npos) << r.lowered;
  EXPECT_THROW(Trace().rfactor("T_dense", "k", 4, true).parallel("T_dense", "k_i").replay(w.dag), Error);
}

// A copy asked for in half is stored in half; only a float tensor's may be.
TEST(ScheduleTrace, CacheReadInHalfOnlyForFloats) {
  auto w = ops::dense_workload({2, 64}, {3, 64});
  State s = Trace().cache_read("T_dense", "weight", {0, 1}, "", "float16").replay(w.dag);
  EXPECT_EQ(s.stage("weight.cache").tensor->dtype, ir::DType::Float16);
  EXPECT_EQ(Trace().cache_read("T_dense", "weight", {0, 1}).replay(w.dag).stage("weight.cache").tensor->dtype,
            ir::DType::Float32);
  EXPECT_THROW(Trace().cache_read("T_dense", "weight", {0, 1}, "", "int8").replay(w.dag), Error);
}

// cache_read: the dense stage reads a transposed copy of its weight, made
// inside its column tiles (a packed tile of 8 columns x all of k).
TEST(ScheduleTrace, CacheReadCopiesATileInTheLayoutAsked) {
  auto w = ops::dense_workload({6, 32}, {16, 32});
  Trace t;
  t.cache_read("T_dense", "weight", {1, 0}).split("T_dense", "j", {8});
  t.reorder("T_dense", {"j.0", "i", "k", "j.1"}).compute_at("weight.cache", "T_dense", "j.0");
  t.vectorize("T_dense", "j.1");
  State s = t.replay(w.dag);
  EXPECT_EQ(s.print(), "weight.cache (at T_dense.j.0): a1[32] a0[16]\nT_dense: j.0[2] i[6] k[32]r j.1[8]{vectorize}\n");
  const auto r = testing::check_schedule(w, t, 1);
  EXPECT_LT(r.max_rel_error, 1e-5) << r.lowered;
  EXPECT_NE(r.lowered.find("allocate weight.cache[32, 8]"), std::string::npos) << r.lowered;  // not 32 x 16
}

TEST(ScheduleDefault, ExistsForEveryKindOfDag) {
  auto w = conv_nchwc();
  Trace t = default_schedule(w.dag);
  EXPECT_NO_THROW(tir::lower(w.dag, t));
  State s = t.replay(w.dag);
  EXPECT_EQ(s.stage("data_pad").location, Location::Inlined);
  EXPECT_EQ(s.stage("T_relu").iters[0].annotation, Annotation::Parallel);
}

}  // namespace
}  // namespace tessera::schedule
