#include <gtest/gtest.h>

#include <algorithm>

#include "ir/functor.h"
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

// A tile's offset plus a position in it, divided by a multiple of the tile:
// (k*32 + j) / 64 = k / 2 and (k*32 + j) mod 64 = (k mod 2)*32 + j where
// 0 <= j < 32; the constant splits likewise. Not where j may reach 32.
TEST(TirSimplify, QuotientsOfATileOffsetPlusAPositionInTheTile) {
  Var k("k"), j("j"), t("t");
  RangeMap r;
  r[j] = Interval{0, 31};
  r[t] = Interval{0, 127};
  const Expr c64 = ir::make_int(64);
  EXPECT_EQ(ir::to_string(simplify(ir::floordiv(k * 32 + j, c64), r)), "floordiv(k, 2)");
  EXPECT_EQ(ir::to_string(simplify(ir::floormod(k * 32 + j, c64), r)), "((floormod(k, 2)*32) + j)");
  // j*2 + t/64 < 32 too (a fetch's rows: two per step of 128 threads).
  const Expr row = j * 2 + ir::floordiv(t, ir::make_int(64));
  RangeMap rows;
  rows[j] = Interval{0, 15};
  rows[t] = Interval{0, 127};
  EXPECT_EQ(ir::to_string(simplify(ir::floordiv(k * 32 + row + 576, ir::make_int(192)), rows)),
            ir::to_string(simplify(ir::floordiv(k + 18, ir::make_int(6)))));
  // Where the position may cross the tile: kept.
  EXPECT_EQ(ir::to_string(simplify(ir::floordiv(k * 32 + t, c64), r)), "floordiv(((k*32) + t), 64)");
  // A tile of no divisor of the divisor: kept.
  EXPECT_EQ(ir::to_string(simplify(ir::floordiv(k * 24 + j, c64), r)).find("floordiv(k"), std::string::npos);
  // The digits of k in (tap, channel) order put back together: k.
  const Expr tap = ir::floordiv(k, c64);
  EXPECT_EQ(ir::to_string(simplify(ir::floordiv(tap, ir::make_int(3)) * 192 + ir::floormod(tap, ir::make_int(3)) * 64 +
                                   ir::floormod(k, c64))),
            "k");
  // And the values agree everywhere.
  for (int64_t kv = -3; kv < 5; ++kv)
    for (int64_t jv = 0; jv < 32; ++jv) {
      const ir::VarMap at{{k, Expr(kv)}, {j, Expr(jv)}};
      int64_t div = 0, mod = 0, want = kv * 32 + jv;
      ASSERT_TRUE(ir::is_const_int(simplify(ir::substitute(simplify(ir::floordiv(k * 32 + j, c64), r), at)), &div));
      ASSERT_TRUE(ir::is_const_int(simplify(ir::substitute(simplify(ir::floormod(k * 32 + j, c64), r), at)), &mod));
      EXPECT_EQ(div, want >= 0 ? want / 64 : -((-want + 63) / 64)) << kv << " " << jv;
      EXPECT_EQ(div * 64 + mod, want);
    }
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
