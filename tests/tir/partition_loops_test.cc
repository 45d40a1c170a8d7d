// Loop partitioning: guards of non-divisible register tiles leave the steady
// state, the tails keep them, and the result computes what the input did.
#include <gtest/gtest.h>

#include "ops/workloads.h"
#include "schedule/manual_schedule.h"
#include "testing/check.h"
#include "tir/lower.h"
#include "tir/partition_loops.h"
#include "tir/printer.h"
#include "tir/simplify.h"
#include "tir/stmt_functor.h"
#include "tir/unroll.h"

namespace tessera::tir {
namespace {

using ir::Expr;
using ir::Var;

int count_ifs(const Stmt& s) {
  int n = 0;
  visit_stmts(s, [&](const Stmt& x) { n += x->kind == StmtKind::IfThenElse; });
  return n;
}

// for v in 0..extent: for i in 0..3 (unrolled): if (cond(v, i)) out[v*3 + i] = 1
Stmt guarded_tile(const Var& v, int64_t extent, const ir::Tensor& out, const std::function<Expr(Expr, Expr)>& cond) {
  Var i("i");
  Stmt store = make_store(out, {Expr(v) * 3 + Expr(i)}, ir::make_float(1.0));
  return make_for(v, extent, ForKind::Serial, make_for(i, 3, ForKind::Unrolled, make_if(cond(v, i), store)));
}

TEST(TirPartitionLoops, TileGuardLeavesTheSteadyState) {
  Var v("v");
  ir::Tensor out = ir::placeholder({57}, "out");
  // 56 columns in tiles of 3: tiles 0..17 are whole, tile 18 holds 2 columns.
  Stmt s = guarded_tile(v, 19, out, [](Expr v, Expr i) { return v * 3 + i < ir::make_int(56); });
  Stmt p = partition_loops(s);
  const auto* seq = as<SeqNode>(p);
  ASSERT_NE(seq, nullptr) << to_string(p);
  ASSERT_EQ(seq->stmts.size(), 2u) << to_string(p);
  const auto* steady = as<ForNode>(seq->stmts[0]);
  ASSERT_NE(steady, nullptr) << to_string(p);
  EXPECT_EQ(steady->extent, 18);
  EXPECT_EQ(count_ifs(seq->stmts[0]), 0) << to_string(p);
  EXPECT_EQ(count_ifs(seq->stmts[1]), 1) << to_string(p);  // the tail keeps its guard
  // After unrolling and simplification the tail's guards fold: 56 stores in all.
  int stores = 0;
  Stmt unrolled = simplify(unroll_loops(p));
  visit_stmts(unrolled, [&](const Stmt& x) { stores += x->kind == StmtKind::Store; });
  EXPECT_EQ(count_ifs(unrolled), 0) << to_string(unrolled);
  EXPECT_EQ(stores, 3 + 2);  // the steady loop's 3 (it stays a loop) and the tail's 2
}

TEST(TirPartitionLoops, LowerBoundGuardSplitsOffTheHead) {
  Var v("v");
  ir::Tensor out = ir::placeholder({30}, "out");
  // v*3 + i >= 4 holds for every i from v = 2 on.
  Stmt p = partition_loops(guarded_tile(v, 10, out, [](Expr v, Expr i) { return v * 3 + i >= ir::make_int(4); }));
  const auto* seq = as<SeqNode>(p);
  ASSERT_NE(seq, nullptr) << to_string(p);
  ASSERT_EQ(seq->stmts.size(), 2u) << to_string(p);
  EXPECT_EQ(count_ifs(seq->stmts[0]), 1) << to_string(p);
  const auto* steady = as<ForNode>(seq->stmts[1]);
  ASSERT_NE(steady, nullptr) << to_string(p);
  EXPECT_EQ(steady->extent, 8);
  EXPECT_EQ(count_ifs(seq->stmts[1]), 0) << to_string(p);
}

TEST(TirPartitionLoops, GuardsOnOuterOrNonLinearTermsStay) {
  Var v("v"), outer("outer");
  ir::Tensor out = ir::placeholder({60}, "out");
  // Depends on a loop outside v: unknown range, nothing to partition by.
  Stmt a = guarded_tile(v, 19, out, [&](Expr v, Expr i) { return v * 3 + i + Expr(outer) < ir::make_int(56); });
  EXPECT_EQ(to_string(partition_loops(a)), to_string(a));
  // v inside a floormod: not linear in v.
  Stmt b = guarded_tile(v, 19, out, [](Expr v, Expr i) { return ir::floormod(v, 5) + i < ir::make_int(4); });
  EXPECT_EQ(to_string(partition_loops(b)), to_string(b));
  // Already true everywhere: nothing to gain.
  Stmt c = guarded_tile(v, 18, out, [](Expr v, Expr i) { return v * 3 + i < ir::make_int(56); });
  EXPECT_EQ(to_string(partition_loops(c)), to_string(c));
}

// Nested partitions multiply copies of a body; past a bound the guards stay.
TEST(TirPartitionLoops, NestedPartitionsStayBounded) {
  ir::Tensor out = ir::placeholder({5, 5, 5, 5, 5, 5, 5, 5}, "out");
  ir::Tensor count = ir::placeholder({5, 5, 5, 5, 5, 5, 5, 5}, "count");
  std::vector<Var> vars;
  std::vector<Expr> indices;
  Expr cond;
  for (int d = 0; d < 8; ++d) {
    vars.emplace_back("v" + std::to_string(d));
    indices.push_back(vars.back());
    Expr c = Expr(vars.back()) < ir::make_int(4);
    cond = cond ? (cond && c) : c;
  }
  // A guarded store and an unguarded one, so that every tail keeps a body.
  Stmt s = make_seq({make_if(cond, make_store(out, indices, ir::make_float(1.0))),
                     make_store(count, indices, ir::make_float(1.0))});
  for (int d = 7; d >= 0; --d) s = make_for(vars[d], 5, ForKind::Serial, s);
  Stmt p = partition_loops(s);
  int stores = 0;
  visit_stmts(p, [&](const Stmt& x) { stores += x->kind == StmtKind::Store; });
  EXPECT_GT(stores, 2) << to_string(p);  // the outer loops were partitioned
  EXPECT_LE(stores, 2 * 27);             // not 2^8 combinations of steady state and tail
  EXPECT_GT(count_ifs(p), 0);            // the inner loops kept their guards
}

// A conv whose register tile (4 channel blocks x 3 columns) divides neither
// 7 nor 11 output columns matches the reference, and no store of it is left
// under a guard.
TEST(TirPartitionLoops, NonDivisibleConvTilesMatchTheReference) {
  for (int64_t width : {7, 11}) {
    SCOPED_TRACE("width " + std::to_string(width));
    ops::Workload w = ops::conv2d_nchwc_workload({1, 2, 5, width, 8}, {4, 2, 3, 3, 8, 8},
                                                 ops::Conv2dAttrs::symmetric(1, 1));
    schedule::Trace t =
        schedule::conv2d_nchwc_schedule(w.dag, {.bits = 256, .registers = 16}, schedule::RegisterTile{4, 3});
    auto r = testing::check_schedule(w, t, 2);
    EXPECT_LE(r.max_rel_error, 1e-4) << r.lowered;
    LoweredFunc f = prepare_for_codegen(lower(w.dag, t, "k"));
    // The tail's guards fold once unrolled: no store is left under a guard.
    int guarded_stores = 0;
    visit_stmts(f.body, [&](const Stmt& x) {
      if (const auto* n = as<IfThenElseNode>(x)) guarded_stores += n->then_case->kind == StmtKind::Store;
    });
    EXPECT_EQ(guarded_stores, 0) << to_string(f);
  }
}

// A strided 1x1 conv (7x7 outputs) runs its 4x3 AVX2 tiles along all 49
// positions: one guard-free loop of 16 tiles, then one tail column per image
// instead of one per row.
TEST(TirPartitionLoops, Flattened1x1TilesRunAlongTheWholeImage) {
  ops::Workload w =
      ops::conv2d_nchwc_workload({1, 2, 14, 14, 8}, {4, 2, 1, 1, 8, 8}, ops::Conv2dAttrs::symmetric(2, 0));
  schedule::Trace t = schedule::conv2d_nchwc_schedule(w.dag, {.bits = 256, .registers = 16});
  auto r = testing::check_schedule(w, t, 2);
  EXPECT_LE(r.max_rel_error, 1e-4) << r.lowered;
  LoweredFunc f = prepare_for_codegen(lower(w.dag, t, "k"));
  int steady = 0;
  visit_stmts(f.body, [&](const Stmt& x) {
    if (const auto* loop = as<ForNode>(x); loop && loop->extent == 16 && count_ifs(x) == 0) ++steady;
  });
  EXPECT_EQ(steady, 1) << to_string(f);
}

// The padding stage computed once: borders become stores of zero and the
// interior a plain copy, with no select left on any element.
TEST(TirPartitionLoops, PaddingCopyLosesItsSelects) {
  ops::Workload w = ops::conv2d_nchwc_workload({1, 2, 6, 9, 8}, {2, 2, 3, 3, 8, 8}, ops::Conv2dAttrs::symmetric(1, 1));
  schedule::Trace t = schedule::conv2d_nchwc_schedule(w.dag, {.bits = 256, .registers = 16});
  LoweredFunc f = prepare_for_codegen(lower(w.dag, t, "k"));
  int selects = 0, pad_stores = 0;
  visit_stmts(f.body, [&](const Stmt& x) {
    const auto* store = as<StoreNode>(x);
    if (!store || store->buffer->name != "data_pad") return;
    ++pad_stores;
    ir::post_order_visit(store->value, [&](const Expr& e) { selects += e.kind() == ir::ExprKind::Select; });
  });
  EXPECT_GT(pad_stores, 0) << to_string(f);
  EXPECT_EQ(selects, 0) << to_string(f);
  auto r = testing::check_schedule(w, t, 2);
  EXPECT_LE(r.max_rel_error, 1e-4) << r.lowered;
}

}  // namespace
}  // namespace tessera::tir
