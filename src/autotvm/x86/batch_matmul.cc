// batch_matmul.x86: C[b, i, j] = sum_k A[b, i, k] * B[b, j, k]. A tile of
// tile_y rows x tile_x columns (vectorised along columns), optionally
// accumulated in a local cache; K split, its inner part unrolled; parallel
// over batches or batches x row tiles.
#include "autotvm/x86/schedule_util.h"
#include "autotvm/x86/x86_templates.h"

namespace tessera::autotvm::x86 {

namespace {

const char* kTag = "batch_matmul";

schedule::Trace batch_matmul_trace(const ops::Workload& w, const ConfigEntity& c) {
  const ir::Tensor mm = stage_by_tag(w.dag, kTag, "batch_matmul.x86");
  const ir::Tensor out = w.dag.outputs().at(0);
  const int64_t ty = c.split("tile_y").at(1), tx = c.split("tile_x").at(1), tk = c.split("tile_k").at(1);
  const bool cache = c.value("cache_write").get<bool>();

  schedule::Trace t;
  for (const auto& s : w.dag.tensors())
    if (!s->is_placeholder() && s != mm && s != out) t.compute_inline(s->name);
  std::string acc = mm->name;
  if (cache && mm == out) {
    t.cache_write(mm->name);
    acc = cache_write_name(mm->name);
  }
  const auto o = axis_names(out);  // b, i, j
  t.split(out->name, o[1], {ty});
  t.split(out->name, o[2], {tx});
  const std::string i0 = split_part(o[1], 0), i1 = split_part(o[1], 1), j0 = split_part(o[2], 0),
                    j1 = split_part(o[2], 1);
  const auto a = axis_names(mm);
  const std::string k = reduce_names(mm)[0];
  std::vector<std::string> reduce = {k};
  std::vector<std::string> order = {o[0], i0, j0};
  if (acc == out->name) {  // no cache: the output accumulates in memory, K
                           // inside the tile loops
    if (tk > 1) {
      t.split(out->name, k, {tk});
      reduce = {split_part(k, 0), split_part(k, 1)};
    }
    order.insert(order.end(), reduce.begin(), reduce.end());
  }
  order.insert(order.end(), {i1, j1});
  t.reorder(out->name, order);
  if (c.value("parallel").get<std::string>() == "batch_rows") {
    t.fuse(out->name, {o[0], i0});
    t.parallel(out->name, fused_name({o[0], i0}));
  } else {
    t.parallel(out->name, o[0]);
  }
  t.unroll(out->name, i1);
  t.vectorize(out->name, j1);
  if (acc == out->name) {
    if (tk > 1 && c.value("unroll_k").get<bool>()) t.unroll(out->name, split_part(k, 1));
    return t;
  }
  t.compute_at(acc, out->name, j0);
  if (tk > 1) {
    t.split(acc, k, {tk});
    reduce = {split_part(k, 0), split_part(k, 1)};
  }
  std::vector<std::string> acc_order = {a[0]};
  acc_order.insert(acc_order.end(), reduce.begin(), reduce.end());
  acc_order.insert(acc_order.end(), {a[1], a[2]});
  t.reorder(acc, acc_order);
  t.unroll(acc, a[1]);
  if (tk > 1 && c.value("unroll_k").get<bool>()) t.unroll(acc, split_part(k, 1));
  t.vectorize(acc, a[2]);
  return t;
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
    // A first guess: 4 rows x one or two vectors of columns, accumulated in
    // registers.
    const int64_t lanes = target.vector_lanes();
    const int64_t rows = divisors_up_to(m, 4).back(), cols = divisors_up_to(n, lanes).back();
    s.set_fallback({{"tile_y", {m / rows, rows}}, {"tile_x", {n / cols, cols}}});
    return s;
  };
  t.apply = batch_matmul_trace;
  return t;
}

}  // namespace tessera::autotvm::x86
