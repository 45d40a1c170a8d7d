#include <gtest/gtest.h>

#include "ops/workloads.h"
#include "schedule/manual_schedule.h"
#include "testing/check.h"
#include "tir/lower.h"
#include "tir/pipeline_fetches.h"
#include "tir/printer.h"
#include "tir/stage_fetches.h"
#include "tir/stmt_functor.h"

namespace tessera::tir {
namespace {

// conv 3x3 pad 1 on a 7x7 image with the padding inlined, the output row as
// the tile and the kernel width unrolled.
ops::Workload small_conv() {
  return ops::conv2d_nchwc_workload({1, 2, 7, 7, 8}, {1, 2, 3, 3, 8, 8}, ops::Conv2dAttrs::symmetric(1, 1));
}

schedule::Trace inline_pad_schedule(const ops::Workload& w) {
  schedule::Trace t = schedule::conv2d_nchwc_schedule(w.dag, {.bits = 256, .registers = 16}, schedule::RegisterTile{1, 7});
  schedule::Trace out;
  out.compute_inline("data_pad");
  for (const auto& step : t.steps())
    if (!std::holds_alternative<schedule::ComputeInlineStep>(step) &&
        !(std::holds_alternative<schedule::FuseStep>(step) && std::get<schedule::FuseStep>(step).stage == "data_pad") &&
        !(std::holds_alternative<schedule::AnnotateStep>(step) &&
          std::get<schedule::AnnotateStep>(step).stage == "data_pad"))
      out.add(step);
  out.unroll("conv2d_NCHWc.local", "rx");
  return out;
}

int count_stores(const Stmt& s) {
  int n = 0;
  visit_stmts(s, [&](const Stmt& x) { n += x->kind == StmtKind::Store; });
  return n;
}

TEST(TirCodegenPasses, PaddingRowsAreSkippedAndZeroTapsVanish) {
  auto w = small_conv();
  auto trace = inline_pad_schedule(w);
  LoweredFunc f = lower(w.dag, trace);
  LoweredFunc ready = prepare_for_codegen(f);
  std::string text = to_string(ready);
  // The row condition moved out of the taps, to just inside the kernel-row loop.
  EXPECT_NE(text.find("for ry in 0..3\n        if"), std::string::npos) << text;
  // 7 columns x 3 kernel columns, less the 2 taps that read only padding, plus
  // 7 initial zeros and the 7 (unrolled) copies out of the tile.
  EXPECT_EQ(count_stores(ready.body), 7 * 3 - 2 + 7 + 7) << text;
  auto r = testing::check_schedule(w, trace, 2);
  EXPECT_LE(r.max_rel_error, 1e-5) << r.lowered;
}

TEST(TirCodegenPasses, MaxReductionsAreNotSkipped) {
  // max(acc, 0) is not a no-op: padding zeros of a max pool must stay.
  auto w = ops::max_pool2d_workload({1, 3, 5, 5}, [] {
    ops::Pool2dAttrs a;
    a.kernel_h = a.kernel_w = 3;
    a.stride_h = a.stride_w = 1;
    a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = 1;
    return a;
  }());
  schedule::Trace t;
  for (const auto& s : w.dag.tensors())
    if (!s->is_placeholder() && s != w.dag.outputs()[0]) t.compute_inline(s->name);
  auto r = testing::check_schedule(w, t);
  EXPECT_LE(r.max_rel_error, 1e-6) << r.lowered;
}

// A fetch of 3 steps over 64 threads into a shared buffer of 160 (the last
// step's threads past 160 idle), each element of a padded row: staged, its
// loads (each zero outside the bound and the window) come first, unrolled,
// into 3 registers, then its stores under the bound; so is one of 21 steps
// (ResNet-18's layer3 weights at batch 1), within kMaxStagedRegisters. Not
// a fetch of 33 steps, nor a store that reads no memory or the buffer it
// writes, nor one to a buffer not shared.
TEST(TirCodegenPasses, FetchesLoadEveryStepBeforeTheyStore) {
  const ir::Tensor data = ir::placeholder({200}, "data");
  const ir::Tensor cache = ir::placeholder({160}, "cache"), local = ir::placeholder({160}, "local");
  ir::Var s("s"), t("t");
  auto fetch = [&](int64_t steps, const ir::Tensor& into, const ir::Expr& value, tir::MemoryScope scope) {
    const ir::Expr at = ir::Expr(s) * 64 + ir::Expr(t);
    return make_allocate(
        into,
        make_for(s, steps, ForKind::Serial,
                 make_for(t, 64, ForKind::ThreadX, make_if(at < ir::Expr(int64_t{160}), make_store(into, {at}, value)))),
        scope);
  };
  const ir::Expr at = ir::Expr(s) * 64 + ir::Expr(t);
  const ir::Expr padded = ir::select(at >= ir::Expr(int64_t{1}), ir::load(data, {at - ir::Expr(int64_t{1})}),
                                     ir::make_float(0.0));
  const std::string staged = to_string(stage_fetches(fetch(3, cache, padded, MemoryScope::Shared)));
  const size_t loads = staged.find("cache.staged[s] = tir.if_then_else"), stores = staged.find("cache[((s*64) + t)] =");
  EXPECT_NE(staged.find("allocate cache.staged[3] (local)"), std::string::npos) << staged;
  EXPECT_NE(staged.find("for s in 0..3 (unrolled)"), std::string::npos) << staged;
  ASSERT_NE(loads, std::string::npos) << staged;
  ASSERT_NE(stores, std::string::npos) << staged;
  EXPECT_LT(loads, stores) << staged;
  EXPECT_NE(staged.find("] = cache.staged["), std::string::npos) << staged;
  EXPECT_NE(staged.find("if (((s*64) + t) < 160)\n      cache["), std::string::npos) << staged;
  EXPECT_NE(to_string(stage_fetches(fetch(21, cache, padded, MemoryScope::Shared))).find("cache.staged[21]"),
            std::string::npos);
  for (const Stmt& unchanged : {fetch(kMaxStagedRegisters + 1, cache, padded, MemoryScope::Shared),
                                fetch(3, cache, ir::make_float(1.0), MemoryScope::Shared),
                                fetch(3, cache, ir::load(cache, {ir::Expr(t)}), MemoryScope::Shared),
                                fetch(3, local, padded, MemoryScope::Local)})
    EXPECT_EQ(to_string(stage_fetches(unchanged)).find("staged"), std::string::npos) << to_string(unchanged);
}


// A pipelined step k of 4: fetch 3 steps of 64 threads into a shared
// buffer, barrier, accumulate from it, barrier. Staged and pipelined, the
// registers live outside the loop, loaded for k = 0 before it and for
// k + 1 after its first barrier (not on the last step); the loop is then
// serial. A body of another form, or a fetch that reads what the loop
// writes, stays as it was (serial).
TEST(TirCodegenPasses, PipelinedStepsLoadTheNextStepAfterTheFirstBarrier) {
  const ir::Tensor data = ir::placeholder({640}, "data"), out = ir::placeholder({64}, "out");
  const ir::Tensor cache = ir::placeholder({160}, "cache");
  ir::Var k("k"), s("s"), t("t"), u("u");
  auto step_loop = [&](const ir::Tensor& source, bool barriers) {
    const ir::Expr at = ir::Expr(s) * 64 + ir::Expr(t);
    const Stmt fetch =
        make_for(s, 3, ForKind::Serial,
                 make_for(t, 64, ForKind::ThreadX,
                          make_if(at < ir::Expr(int64_t{160}),
                                  make_store(cache, {at}, ir::load(source, {ir::Expr(k) * 160 + at})))));
    const Stmt compute = make_for(
        u, 64, ForKind::ThreadX,
        make_store(out, {ir::Expr(u)}, ir::load(out, {ir::Expr(u)}) + ir::load(cache, {ir::Expr(u)})));
    std::vector<Stmt> body = {fetch, compute};
    if (barriers) body = {fetch, make_barrier(), compute, make_barrier()};
    return make_for(k, 4, ForKind::Pipelined, make_allocate(cache, make_seq(body), MemoryScope::Shared));
  };
  const std::string p = to_string(pipeline_fetches(stage_fetches(step_loop(data, true))));
  const size_t registers = p.find("allocate cache.staged[3] (local)"),
               first = p.find("cache.staged[s] = tir.if_then_else((((s*64) + t) < 160), data[((s*64) + t)], 0f)"),
               loop = p.find("for k in 0..4\n"), barrier = p.find("barrier"), next = p.find("if ((k + 1) < 4)"),
               compute = p.find("out[u] = ");
  for (size_t at : {registers, first, loop, barrier, next, compute}) ASSERT_NE(at, std::string::npos) << p;
  EXPECT_LT(registers, first) << p;
  EXPECT_LT(first, loop) << p;
  EXPECT_LT(barrier, next) << p;
  EXPECT_LT(next, compute) << p;
  EXPECT_NE(p.find("data[((((k*160) + (s*64)) + t) + 160)]"), std::string::npos) << p;  // step k + 1's
  EXPECT_EQ(p.find("(pipelined)"), std::string::npos) << p;

  // No barriers, or a fetch of the buffer the step accumulates: serial, unchanged.
  for (const Stmt& unchanged : {step_loop(data, false), step_loop(out, true)}) {
    const std::string text = to_string(pipeline_fetches(stage_fetches(unchanged)));
    EXPECT_EQ(text.find("if ((k + 1)"), std::string::npos) << text;
    EXPECT_NE(text.find("for k in 0..4\n"), std::string::npos) << text;
  }
}

// A fetch of 4 floats a lane (a vectorized copy) is staged inside a
// pipelined loop, each step's vector into 4 registers under the bound (up
// to 8 steps: kMaxStagedRegisters), and so is a fetch of one step; nowhere
// else (ptxas already issues such loads together).
TEST(TirCodegenPasses, VectorAndOneStepFetchesAreStagedInPipelinedLoopsOnly) {
  const ir::Tensor data = ir::placeholder({1024}, "data"), cache = ir::placeholder({512}, "cache");
  ir::Var k("k"), s("s"), t("t"), v("v");
  // A step k of 2 of kind `kind` that fetches by `fetch` between its barriers.
  auto step_of = [&](const Stmt& fetch, ForKind kind) {
    return make_for(k, 2, kind,
                    make_allocate(cache, make_seq({fetch, make_barrier(), make_barrier()}), MemoryScope::Shared));
  };
  const ir::Expr at = (ir::Expr(s) * 64 + ir::Expr(t)) * 4 + ir::Expr(v);
  auto vectors_of = [&](int64_t steps) {
    return make_for(s, steps, ForKind::Serial,
                    make_for(t, 64, ForKind::ThreadX,
                             make_if(ir::Expr(s) * 64 + ir::Expr(t) < ir::Expr(int64_t{100}),
                                     make_for(v, 4, ForKind::Vectorized,
                                              make_store(cache, {at}, ir::load(data, {ir::Expr(k) * 512 + at}))))));
  };
  const Stmt vectors = vectors_of(2);
  const std::string staged = to_string(stage_fetches(step_of(vectors, ForKind::Pipelined)));
  EXPECT_NE(to_string(stage_fetches(step_of(vectors_of(8), ForKind::Pipelined))).find("cache.staged[32]"),
            std::string::npos);
  EXPECT_EQ(to_string(stage_fetches(step_of(vectors_of(9), ForKind::Pipelined))).find("staged"), std::string::npos);
  EXPECT_NE(staged.find("allocate cache.staged[8] (local)"), std::string::npos) << staged;
  EXPECT_NE(staged.find("cache.staged[((s*4) + v)] = data["), std::string::npos) << staged;
  EXPECT_NE(staged.find("] = cache.staged[((s*4) + v)]"), std::string::npos) << staged;
  EXPECT_EQ(to_string(stage_fetches(step_of(vectors, ForKind::Serial))).find("staged"), std::string::npos);

  // A fetch of one step (the thread loops alone): one register a thread, pipelined loops only.
  const Stmt one_step = make_for(t, 64, ForKind::ThreadX,
                                 make_store(cache, {ir::Expr(t)}, ir::load(data, {ir::Expr(k) * 64 + ir::Expr(t)})));
  const std::string one = to_string(stage_fetches(step_of(one_step, ForKind::Pipelined)));
  EXPECT_NE(one.find("allocate cache.staged[1] (local)"), std::string::npos) << one;
  EXPECT_NE(one.find("cache.staged[0] = data[((k*64) + t)]"), std::string::npos) << one;
  EXPECT_NE(one.find("cache[t] = cache.staged[0]"), std::string::npos) << one;
  EXPECT_EQ(to_string(stage_fetches(step_of(one_step, ForKind::Serial))).find("staged"), std::string::npos);
}

}  // namespace
}  // namespace tessera::tir
