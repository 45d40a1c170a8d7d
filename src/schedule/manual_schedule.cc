#include "schedule/manual_schedule.h"

#include <algorithm>

#include "schedule/default_schedule.h"
#include "schedule/iter_names.h"
#include "tessera/error.h"

namespace tessera::schedule {

namespace {

ir::Tensor find_by_tag(const ir::ComputeDAG& dag, const std::string& tag) {
  for (const auto& t : dag.tensors())
    if (t->tag == tag) return t;
  return nullptr;
}

// Largest divisor of `n` that is at most `limit`.
int64_t largest_divisor(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

}  // namespace

Trace conv2d_nchwc_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit, std::optional<RegisterTile> tile) {
  ir::Tensor conv = find_by_tag(dag, "conv2d_nchwc");
  if (!conv) throw Error("conv2d_nchwc_schedule: the DAG has no conv2d_nchwc stage");
  if (!tile) tile = nchwc_register_tile(conv->shape[1], conv->shape[4], conv->shape[3], unit);
  return nchwc_tile_trace(dag, conv->tag, conv_window_tile_plan(conv, tile->oc, 1, tile->ow));
}

int64_t dense_pack_tile(int64_t blocks, int64_t bn, const VectorUnit& unit) {
  // About 12 vector accumulators: enough independent FMA chains to hide latency.
  const int64_t lanes = std::max(1, unit.bits / 32);
  const int64_t vectors_per_block = (bn + lanes - 1) / lanes;
  return largest_divisor(blocks, std::max<int64_t>(1, 12 / vectors_per_block));
}

Trace dense_pack_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit) {
  ir::Tensor dense = find_by_tag(dag, "dense_pack");
  if (!dense) throw Error("dense_pack_schedule: the DAG has no dense_pack stage");
  const ir::Tensor out = dag.outputs().at(0);
  const int64_t bn = std::stoll(dense->attrs.at("bn"));
  const int64_t tile = dense_pack_tile(dense->shape[1] / bn, bn, unit);

  Trace t;
  for (const auto& s : dag.tensors())
    if (!s->is_placeholder() && s != dense && s != out) t.compute_inline(s->name);
  std::string acc = dense->name;
  if (dense == out) {
    t.cache_write(dense->name);
    acc = cache_write_name(dense->name);
  }
  auto o = axis_names(out);  // i, j
  t.split(out->name, o[1], {tile, bn});
  const std::string rows_and_tiles = fused_name({o[0], split_part(o[1], 0)});
  t.fuse(out->name, {o[0], split_part(o[1], 0)});
  t.parallel(out->name, rows_and_tiles);
  t.vectorize(out->name, split_part(o[1], 2));
  t.compute_at(acc, out->name, rows_and_tiles);
  auto d = axis_names(dense);
  const std::string k = dense->reduce_axes[0].var.name();
  t.split(acc, d[1], {bn});
  t.reorder(acc, {d[0], k, split_part(d[1], 0), split_part(d[1], 1)});
  t.unroll(acc, split_part(d[1], 0));
  t.vectorize(acc, split_part(d[1], 1));
  return t;
}

Trace best_manual_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit) {
  if (find_by_tag(dag, "conv2d_nchwc")) return conv2d_nchwc_schedule(dag, unit);
  if (find_by_tag(dag, "dense_pack")) return dense_pack_schedule(dag, unit);
  return default_schedule(dag);
}

}  // namespace tessera::schedule
