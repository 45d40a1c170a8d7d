#include <gtest/gtest.h>

#include <algorithm>

#include "ir/printer.h"
#include "ops/conv2d.h"
#include "ops/dense.h"
#include "ops/reference.h"
#include "ops/elementwise.h"
#include "ops/workloads.h"
#include "schedule/manual_schedule.h"
#include "testing/check.h"
#include "tir/arith.h"
#include "tir/lower.h"
#include "tir/printer.h"
#include "tir/simplify.h"
#include "tessera/error.h"

namespace tessera::tir {
namespace {

using ir::Expr;
using ir::Var;

TEST(TirSimplify, FoldsIndexArithmeticUnderLoopRanges) {
  Var i("i"), j("j");
  // (i*8 + j) / 8 == i and (i*8 + j) % 8 == j when 0 <= j < 8.
  Stmt s = make_for(i, 4, ForKind::Serial,
                    make_for(j, 8, ForKind::Serial,
                             make_store(ir::placeholder({4, 8}, "B"),
                                        {ir::floordiv(i * 8 + j, 8), ir::floormod(i * 8 + j, 8)}, Expr(1.0f))));
  std::string text = to_string(simplify(s));
  EXPECT_NE(text.find("B[i, j] = 1f"), std::string::npos) << text;
}

TEST(TirSimplify, RemovesGuardsProvenByRangesAndKeepsOthers) {
  Var i("i");
  auto buf = ir::placeholder({10}, "B");
  Stmt always = make_for(i, 8, ForKind::Serial, make_if(i < 10, make_store(buf, {i}, Expr(1.0f))));
  Stmt sometimes = make_for(i, 12, ForKind::Serial, make_if(i < 10, make_store(buf, {i}, Expr(1.0f))));
  EXPECT_EQ(to_string(simplify(always)).find("if"), std::string::npos);
  EXPECT_NE(to_string(simplify(sometimes)).find("if (i < 10)"), std::string::npos);
}

TEST(TirSimplify, LinearFormCancelsTerms) {
  Var o("o"), i("i");
  Expr e = (o * 7 + i + 3) - (o * 7);
  EXPECT_EQ(ir::to_string(simplify(e)), "(i + 3)");
  EXPECT_EQ(linear_form(o * 2 + o * 3 - 1).coefficient_of(o), 5);
  RangeMap r;
  r[i] = Interval{0, 7};
  Interval b = bound_of(o * 0 + i * 2 + 1, r);
  EXPECT_EQ(b.min, 1);
  EXPECT_EQ(b.max, 15);
}

// The digits of a loop fused from (n, y, x) of extents (2, 5, 7) put back
// together are the fused loop's variable: n * 35 + y * 7 + x = q.
TEST(TirSimplify, QuotientsAndRemaindersOfAFusedLoopRecombine) {
  Var q("q"), o("o");
  const Expr x = ir::floormod(q, ir::make_int(7)), y = ir::floormod(ir::floordiv(q, ir::make_int(7)), ir::make_int(5));
  const Expr n = ir::floordiv(q, ir::make_int(35));
  EXPECT_EQ(ir::to_string(simplify(n * 35 + y * 7 + x)), "q");
  EXPECT_EQ(ir::to_string(simplify((n * 5 + y) * 7 + x + o * 3 - q - o * 3)), "0");
  // Without the highest digit (an extent-1 batch indexed 0): q mod 35, which
  // is q where q < 35.
  EXPECT_EQ(ir::to_string(simplify(y * 7 + x)), "floormod(q, 35)");
  RangeMap small;
  small[q] = Interval{0, 34};
  EXPECT_EQ(ir::to_string(simplify(y * 7 + x, small)), "q");
  // Not when the digits do not belong together.
  EXPECT_NE(ir::to_string(simplify(n * 35 + y * 7)), "q");
  EXPECT_NE(ir::to_string(simplify(ir::floordiv(q, ir::make_int(7)) * 6 + x)), "q");
}

TEST(TirLower, NonDivisibleSplitIsGuardedAndCorrect) {
  auto w = ops::dense_workload({5, 9}, {11, 9});
  schedule::Trace t;
  t.split("T_dense", "j", {4}).split("T_dense", "i", {2}).reorder("T_dense", {"i.0", "j.0", "k", "i.1", "j.1"});
  auto r = testing::check_schedule(w, t);
  EXPECT_LE(r.max_rel_error, 1e-5);
  EXPECT_NE(r.lowered.find("if"), std::string::npos) << r.lowered;
}

TEST(TirLower, ComputeAtShrinksTheProducerToItsRegion) {
  auto w = ops::conv2d_nchwc_workload({1, 1, 12, 12, 8}, {1, 1, 3, 3, 8, 8}, ops::Conv2dAttrs::symmetric(2, 1));
  schedule::Trace t;
  // Padding computed per output row: 3 input rows (kernel 3, stride 2) of the 13 columns that 6 outputs read.
  t.compute_at("data_pad", "conv2d_NCHWc", "oh");
  auto r = testing::check_schedule(w, t);
  EXPECT_LE(r.max_rel_error, 1e-5);
  EXPECT_NE(r.lowered.find("allocate data_pad[1, 1, 3, 13, 8]"), std::string::npos) << r.lowered;
}

TEST(TirLower, CacheWriteKeepsTheTileLocal) {
  auto w = ops::conv2d_nchwc_workload({1, 2, 8, 8, 8}, {2, 2, 3, 3, 8, 16}, ops::Conv2dAttrs::symmetric(1, 1));
  auto t = schedule::conv2d_nchwc_schedule(w.dag, {.bits = 256, .registers = 16}, schedule::RegisterTile{1, 4});
  auto r = testing::check_schedule(w, t, 2);
  EXPECT_LE(r.max_rel_error, 1e-5);
  EXPECT_NE(r.lowered.find("allocate conv2d_NCHWc.local[1, 1, 1, 4, 16]"), std::string::npos) << r.lowered;
}

// clip(dense(relu(data), weight)): relu is read only by the dense, which is
// itself computed inside the clip's loops.
ops::Workload relu_dense_clip_workload() {
  constexpr int64_t kM = 4, kK = 10, kN = 6;
  ir::Tensor data = ir::placeholder({kM, kK}, "data");
  ir::Tensor weight = ir::placeholder({kN, kK}, "weight");
  ir::Tensor out = ops::clip(ops::dense(ops::relu(data), weight), -2.f, 2.f);
  auto reference = [](const std::vector<const float*>& in, float* o) {
    for (int64_t i = 0; i < kM; ++i)
      for (int64_t j = 0; j < kN; ++j) {
        float sum = 0;
        for (int64_t k = 0; k < kK; ++k) sum += std::max(in[0][i * kK + k], 0.f) * in[1][j * kK + k];
        o[i * kN + j] = std::min(std::max(sum, -2.f), 2.f);
      }
  };
  return {"relu_dense_clip", ir::ComputeDAG({out}), reference};
}

TEST(TirLower, ComputeAtALoopWhoseStageReadsTheProducerOnlyThroughAnotherAttachedStage) {
  auto w = relu_dense_clip_workload();
  schedule::Trace t;
  // The relu's row is computed once per output row, outside the loop over
  // output columns inside which the dense (its only reader) is computed.
  t.compute_at("T_dense", "T_clip", "ax1").compute_at("T_relu", "T_clip", "ax0");
  auto r = testing::check_schedule(w, t);
  EXPECT_LE(r.max_rel_error, 1e-5);
  EXPECT_NE(r.lowered.find("allocate T_relu[1, 10]"), std::string::npos) << r.lowered;
  EXPECT_NE(r.lowered.find("allocate T_dense[1, 1]"), std::string::npos) << r.lowered;
}

TEST(TirLower, AProducerInsideALoopThatItsReaderIsOutsideOfIsAnError) {
  auto w = relu_dense_clip_workload();
  schedule::Trace t;
  t.compute_at("T_dense", "T_clip", "ax0").compute_at("T_relu", "T_clip", "ax1");
  try {
    lower(w.dag, t);
    FAIL() << "lowered";
  } catch (const tessera::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'T_dense', computed outside that loop, reads it"), std::string::npos)
        << e.what();
  }
}

TEST(TirLower, ATileOfWholeRowsOfFlattenedPositionsReadsOnlyThoseRows) {
  // A 1x1 convolution over flattened positions (oh * 6 + ow) reading relu(data):
  // a tile of 12 positions is 2 whole rows, so the relu it needs is 2 rows.
  const ops::Shape data_shape{1, 2, 4, 6, 8}, kernel_shape{3, 2, 1, 1, 8, 8};
  ir::Tensor data = ir::placeholder(data_shape, "data");
  ir::Tensor kernel = ir::placeholder(kernel_shape, "kernel");
  const ops::Conv2dAttrs attrs;
  ir::Tensor out = ops::conv2d_nchwc(ops::relu(data), kernel, attrs);
  ASSERT_EQ(out->shape, (ops::Shape{1, 3, 1, 24, 8}));
  auto reference = [=](const std::vector<const float*>& in, float* o) {
    std::vector<float> relu(in[0], in[0] + 2 * 4 * 6 * 8);
    for (float& v : relu) v = std::max(v, 0.f);
    ops::reference::conv2d_nchwc(relu.data(), data_shape, in[1], kernel_shape, attrs, o);
  };
  ops::Workload w{"relu_conv1x1", ir::ComputeDAG({out}), reference};
  schedule::Trace t;
  t.split(out->name, "ohw", {12}).reorder(out->name, {"n", "ohw.0", "oc_chunk", "oh", "ohw.1", "oc_block", "ic_outer",
                                                      "ry", "rx", "ic_inner"});
  t.compute_at("T_relu", out->name, "ohw.0");
  auto r = testing::check_schedule(w, t);
  EXPECT_LE(r.max_rel_error, 1e-5);
  EXPECT_NE(r.lowered.find("allocate T_relu[1, 2, 2, 6, 8]"), std::string::npos) << r.lowered;
}

TEST(TirLower, AttachingToAStageThatDoesNotReadIsAnError) {
  auto w = ops::conv2d_nchwc_workload({1, 1, 6, 6, 8}, {1, 1, 3, 3, 8, 8}, ops::Conv2dAttrs::symmetric(1, 1),
                                      ops::Epilogue{false, true});
  schedule::Trace t;
  t.compute_at("data_pad", "T_relu", "oh");
  EXPECT_THROW(lower(w.dag, t), tessera::Error);
}

}  // namespace
}  // namespace tessera::tir
