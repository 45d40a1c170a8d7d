// batch_matmul.x86: C[b, i, j] = sum_k A[b, i, k] * B[b, j, k], B transposed
// in the kernel first. A tile of tile_y rows x tile_x columns (vectorised
// along columns), optionally accumulated in a local cache; K split, its inner
// part unrolled; parallel over batches or batches x row tiles
// (schedule/batch_matmul_tile.h).
#include "autotvm/x86/schedule_util.h"
#include "autotvm/x86/x86_templates.h"
#include "schedule/batch_matmul_tile.h"

namespace tessera::autotvm::x86 {

namespace {

const char* kTag = "batch_matmul";

schedule::Trace batch_matmul_trace(const ops::Workload& w, const ConfigEntity& c) {
  return schedule::batch_matmul_tile_trace(w.dag, {.ty = c.split("tile_y").at(1),
                                                   .tx = c.split("tile_x").at(1),
                                                   .tk = c.split("tile_k").at(1),
                                                   .unroll_k = c.value("unroll_k").get<bool>(),
                                                   .cache_write = c.value("cache_write").get<bool>(),
                                                   .parallel = c.value("parallel").get<std::string>()});
}

}  // namespace

Template batch_matmul_template() {
  Template t;
  t.name = "batch_matmul.x86";
  t.target_kind = "llvm";
  t.matches = [](const std::string& op, const ops::OpArgs&) { return op == "batch_matmul"; };
  t.declare = [](const ops::OpArgs& args, const target::Target&) { return args; };
  t.define_space = [](const ops::Workload& w, const target::Target& target) {
    const ir::Tensor mm = stage_by_tag(w.dag, kTag, "batch_matmul.x86");
    const int64_t m = mm->shape[1], n = mm->shape[2], k = mm->reduce_axes[0].extent;
    ConfigSpace s;
    s.define_split("tile_y", m, SplitPolicy::Factors, 2, 8);
    s.define_split("tile_x", n, SplitPolicy::Factors, 2,
                   64);  // vector lanes: at most 64
    s.define_split("tile_k", k, SplitPolicy::Factors, 2, 16);
    s.define_knob("unroll_k", {false, true});
    s.define_knob("cache_write", {true, false});
    s.define_knob("parallel", {"batch_rows", "batch"});
    // The hand-written plan (4 rows x two vectors of columns in registers),
    // its tiles rounded down to divisors.
    const schedule::BatchMatmulPlan plan = schedule::batch_matmul_default_plan(m, n, target.vector_unit());
    const int64_t rows = divisors_up_to(m, plan.ty).back(), cols = divisors_up_to(n, plan.tx).back();
    s.set_fallback({{"tile_y", {m / rows, rows}}, {"tile_x", {n / cols, cols}}});
    return s;
  };
  t.apply = [](const ops::Workload& w, const target::Target&, const ConfigEntity& c) {
    return batch_matmul_trace(w, c);
  };
  return t;
}

}  // namespace tessera::autotvm::x86
