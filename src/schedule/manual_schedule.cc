#include "schedule/manual_schedule.h"

#include <algorithm>

#include "schedule/batch_matmul_tile.h"
#include "schedule/default_schedule.h"
#include "schedule/depthwise_projection_tile.h"
#include "schedule/winograd_tile.h"
#include "tessera/error.h"

namespace tessera::schedule {

namespace {

ir::Tensor find_by_tag(const ir::ComputeDAG& dag, const std::string& tag) {
  for (const auto& t : dag.tensors())
    if (t->tag == tag) return t;
  return nullptr;
}

}  // namespace

Trace conv2d_nchwc_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit, std::optional<RegisterTile> tile) {
  ir::Tensor conv = find_by_tag(dag, "conv2d_nchwc");
  if (!conv) throw Error("conv2d_nchwc_schedule: the DAG has no conv2d_nchwc stage");
  if (!tile)
    tile = nchwc_register_tile(conv->shape[1], conv->shape[4], conv->shape[3], unit, nchwc_chunks_per_group(conv));
  const int parallel_fuse = default_parallel_fuse(conv, *tile);
  NchwcTilePlan plan =
      conv_window_tile_plan(conv, tile->oc, 1, tile->ow, {0, 1, 2}, false, default_accumulator_buffer(conv, *tile));
  plan.parallel_fuse = parallel_fuse;
  return nchwc_tile_trace(dag, conv->tag, plan);
}

RegisterTile int8_register_tile(const ir::Tensor& conv, const VectorUnit& unit) {
  RegisterTile tile = nchwc_register_tile(conv->shape[1], conv->shape[4], conv->shape[3], unit);
  // A dot product's latency needs about a dozen accumulators in flight: a
  // narrow image's row (7 columns) takes several output chunks per tile.
  while (tile.oc * tile.ow * 2 <= 24 && conv->shape[1] % (tile.oc * 2) == 0 && tile.oc * tile.ow < 12) tile.oc *= 2;
  return tile;
}

Trace qlinear_conv2d_nchwc_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit) {
  ir::Tensor conv = find_by_tag(dag, "qlinear_conv2d_nchwc");
  if (!conv) throw Error("qlinear_conv2d_nchwc_schedule: the DAG has no qlinear_conv2d_nchwc stage");
  RegisterTile tile = int8_register_tile(conv, unit);
  const int parallel_fuse = default_parallel_fuse(conv, tile);
  NchwcTilePlan plan =
      conv_window_tile_plan(conv, tile.oc, 1, tile.ow, {0, 1, 2}, false, default_accumulator_buffer(conv, tile));
  plan.parallel_fuse = parallel_fuse;
  return nchwc_tile_trace(dag, conv->tag, plan);
}

Trace qlinear_dense_pack_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit) {
  ir::Tensor dense = find_by_tag(dag, "qlinear_dense_pack");
  if (!dense) throw Error("qlinear_dense_pack_schedule: the DAG has no qlinear_dense_pack stage");
  const int64_t bn = std::stoll(dense->attrs.at("bn"));
  // The float plan over K/4 steps of 4 bytes; its tiles count 32-bit lanes as fp32's do.
  return dense_pack_tile_trace(
      dag, dense_pack_default_plan(dense->shape[0], dense->reduce_axes[0].extent, dense->shape[1] / bn, bn, unit),
      "qlinear_dense_pack");
}

Trace dense_pack_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit) {
  ir::Tensor dense = find_by_tag(dag, "dense_pack");
  if (!dense) throw Error("dense_pack_schedule: the DAG has no dense_pack stage");
  const int64_t bn = std::stoll(dense->attrs.at("bn"));
  return dense_pack_tile_trace(dag, dense_pack_default_plan(dense->shape[0], dense->reduce_axes[0].extent,
                                                           dense->shape[1] / bn, bn, unit));
}

NchwcTilePlan depthwise_nchwc_plan(const ir::Tensor& conv) {
  const auto a = axis_names(conv);    // n, c_chunk, oh, ow, c_block
  const auto r = reduce_names(conv);  // di, dj
  int64_t row = 1;
  for (int64_t d = std::min<int64_t>(8, conv->shape[3]); d >= 1; --d)
    if (conv->shape[3] % d == 0) {
      row = d;
      break;
    }
  NchwcTilePlan plan;
  plan.ow_bn = row;
  plan.tile_order = {a[0], a[1], a[2], r[0], r[1], a[3], a[4]};
  plan.tile_unroll = {a[3], r[1]};
  // Read through a bounds check that partition_loops lifts out of the
  // interior: a padded copy doubles the memory traffic of a kernel this
  // memory-bound (MobileNet-v2's 96-channel stride-2 layer 0.25 -> 0.13 ms
  // alone, 0.82 -> under 0.15 ms in the network, on Zen 3).
  plan.pad = "inline";
  return plan;
}

Trace depthwise_nchwc_schedule(const ir::ComputeDAG& dag) {
  ir::Tensor conv = find_by_tag(dag, "depthwise_conv2d_nchwc");
  if (!conv) throw Error("depthwise_nchwc_schedule: the DAG has no depthwise_conv2d_nchwc stage");
  return nchwc_tile_trace(dag, conv->tag, depthwise_nchwc_plan(conv));
}

Trace pool_nchwc_schedule(const ir::ComputeDAG& dag) {
  ir::Tensor pool = find_by_tag(dag, "pool_max");
  if (!pool) pool = find_by_tag(dag, "pool_sum");
  if (!pool || pool->shape.size() != 5) throw Error("pool_nchwc_schedule: the DAG has no blocked pooling stage");
  // A window over rows and columns of channel blocks, as a depthwise
  // convolution without weights: the same tiles.
  return nchwc_tile_trace(dag, pool->tag, depthwise_nchwc_plan(pool));
}

Trace global_pool_nchwc_schedule(const ir::ComputeDAG& dag) {
  ir::Tensor sum = find_by_tag(dag, "global_pool_sum");
  if (!sum || sum->shape.size() != 5) throw Error("global_pool_nchwc_schedule: the DAG has no blocked global pooling");
  // Each channel block's sum over rows and columns in one vector of its lanes.
  const auto a = axis_names(sum);    // n, c_chunk, 1, 1, c_block
  const auto r = reduce_names(sum);  // rows, columns
  Trace t;
  t.reorder(sum->name, {a[0], a[1], a[2], a[3], r[0], r[1], a[4]});
  t.fuse(sum->name, {a[0], a[1]}).parallel(sum->name, a[0] + "@" + a[1]).vectorize(sum->name, a[4]);
  for (const auto& stage : dag.tensors()) {  // the average (and any epilogue) per block, in place
    if (stage->is_placeholder() || stage == sum) continue;
    if (stage != dag.outputs().at(0)) {
      t.compute_inline(stage->name);
      continue;
    }
    const auto o = axis_names(stage);
    t.fuse(stage->name, {o[0], o[1]}).parallel(stage->name, o[0] + "@" + o[1]).vectorize(stage->name, o[4]);
  }
  return t;
}

namespace {

// The widest partial-result vector for a reduction over `extent` elements:
// the largest divisor of the extent up to the lanes (1: none helps).
int64_t partial_lanes(int64_t extent, int64_t lanes) {
  for (int64_t d = std::min(lanes, extent); d > 1; --d)
    if (extent % d == 0) return d;
  return 1;
}

// A row reduction `stage` (reduce axis j) computed inside `target`'s loop
// `at`, through vectors of `partial` partial results first: stage.rf(.., j_i)
// reduces j_o with its lanes side by side, then the stage reduces the
// lanes. A serial chain of scalar steps otherwise. The rfactor step itself
// must come before the stage's loops change (place it first).
void place_vector_reduction(Trace& t, const ir::Tensor& stage, const std::string& target, const std::string& at,
                            int64_t partial) {
  t.compute_at(stage->name, target, at);
  if (partial <= 1) return;
  const std::string rf = rfactor_name(stage->name), j = reduce_names(stage)[0];
  t.compute_at(rf, target, at);
  std::vector<std::string> order = axis_names(stage);
  order.insert(order.end(), {rfactor_outer(j), rfactor_inner(j)});
  t.reorder(rf, order);
  t.vectorize(rf, rfactor_inner(j));
}

// The stage's last axis as vector loops of `lanes` (codegen keeps wider ones serial).
void vectorize_last_axis(Trace& t, const ir::Tensor& stage, int64_t lanes) {
  const std::string last = axis_names(stage).back();
  t.split(stage->name, last, {lanes});
  t.vectorize(stage->name, split_part(last, 1));
}

// A product reduced over one axis, inside its tile of rows i, computed per
// group of `vectors` vectors of its last axis x (its axes: `outer`, kept
// outermost in this order, then i, then x): every row accumulates those
// vectors in registers (its cache_write stage, made before) across the whole
// reduction, each loaded vector serving all rows and each row's broadcast
// serving all vectors (rows x vectors accumulators).
void rows_times_vectors(Trace& t, const ir::Tensor& stage, const std::vector<std::string>& outer, int64_t lanes,
                        int64_t vectors) {
  const auto a = axis_names(stage);
  const std::string i = a[1], x = a.back();  // (b, i, ..., x)
  const int64_t extent = stage->shape.back();
  while (vectors > 1 && extent % (lanes * vectors) != 0) --vectors;
  const int64_t group = lanes * vectors;
  t.split(stage->name, x, {group});
  std::vector<std::string> order = outer;
  order.insert(order.end(), {split_part(x, 0), i, split_part(x, 1)});
  t.reorder(stage->name, order);
  t.vectorize(stage->name, split_part(x, 1));
  const std::string local = cache_write_name(stage->name);
  t.compute_at(local, stage->name, split_part(x, 0));
  std::vector<std::string> local_order = outer;
  local_order.insert(local_order.end(), {reduce_names(stage)[0], i, x});
  t.reorder(local, local_order);
  t.split(local, x, {lanes});
  t.unroll(local, i);
  t.unroll(local, split_part(x, 0));
  t.vectorize(local, split_part(x, 1));
}

}  // namespace

Trace rows_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit) {
  const ir::Tensor out = dag.outputs().at(0);
  if (!is_rows_operator(dag))
    throw Error("rows_schedule: the DAG's output is not a softmax or a layer norm over its last axis");
  const auto o = axis_names(out);
  const std::vector<std::string> rows(o.begin(), o.end() - 1);
  Trace t;
  std::string row = rows[0];
  if (rows.size() > 1) {
    t.fuse(out->name, rows);
    row = fused_name(rows);
  }
  t.parallel(out->name, row);
  const int64_t lanes = unit.lanes();
  vectorize_last_axis(t, out, lanes);
  const int64_t partial = partial_lanes(out->shape.back(), lanes);
  const auto& stages = dag.tensors();
  for (const auto& stage : stages)
    if (stage->tag == out->tag && stage->is_reduction() && partial > 1)
      t.rfactor(stage->name, reduce_names(stage)[0], partial);
  // Consumers first: a stage moves inside the row loop once what reads it is there.
  for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
    const ir::Tensor& stage = *it;
    if (stage->is_placeholder() || stage == out) continue;
    if (stage->tag != out->tag) {  // an elementwise prologue
      t.compute_inline(stage->name);
      continue;
    }
    // The row's reductions (softmax's maximum and sum, layer norm's sums),
    // its full-width values (the exponentials) and its per-row ones (the
    // inverse deviation), each computed for this row only.
    if (stage->is_reduction()) {
      place_vector_reduction(t, stage, out->name, row, partial);
    } else {
      t.compute_at(stage->name, out->name, row);
      if (stage->shape.size() == out->shape.size()) vectorize_last_axis(t, stage, lanes);
    }
  }
  return t;
}

bool is_rows_operator(const ir::ComputeDAG& dag) {
  const ir::Tensor out = dag.outputs().at(0);
  if (out->shape.size() < 2 || (out->tag != "softmax" && out->tag != "layer_norm")) return false;
  // Layer norm over several trailing axes reduces over each: not a row of the last.
  for (const auto& stage : dag.tensors())
    if (stage->tag == out->tag && stage->is_reduction() && reduce_names(stage).size() != 1) return false;
  return true;
}

Trace attention_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit) {
  const ir::Tensor out = dag.outputs().at(0);
  if (out->tag != "attention") throw Error("attention_schedule: the DAG's output is not an attention");
  const int64_t rows = std::stoll(out->attrs.at("rows")), keys = std::stoll(out->attrs.at("keys"));
  const int64_t lanes = unit.lanes();
  const ir::Tensor kt = stage_by_tag(dag, "attention_transpose_k", "attention_schedule");
  const ir::Tensor scores = stage_by_tag(dag, "attention_scores", "attention_schedule");
  const ir::Tensor values = stage_by_tag(dag, "attention_values", "attention_schedule");  // (b, i, t, c)
  // The two products accumulate rows x `vectors` vectors in registers: 4 x 4
  // of AVX-512's 32 registers, 4 x 3 of AVX2's 16 (three quarters at most,
  // the rest for the loaded vectors and the rows' broadcasts).
  const int64_t vectors = std::clamp<int64_t>(unit.registers * 3 / 4 / rows, 1, 4);
  Trace t;
  t.parallel(kt->name, axis_names(kt)[0]);
  t.cache_write(scores->name);
  t.cache_write(values->name);
  // A key tile's maximum and sum as vectors of partial results first (a
  // serial chain of scalar steps otherwise), where a vector's width of
  // lanes divides the tile.
  const int64_t partial = partial_lanes(keys, lanes);
  if (partial > 1)
    for (const auto& stage : dag.tensors())
      if (stage->tag == "attention_tile_softmax" && stage->is_reduction())
        t.rfactor(stage->name, reduce_names(stage)[0], partial);
  // A tile of query rows per parallel iteration: of one head (sequence
  // first, the loops g, i, h, c reordered g, h, i, c: each tile as in (b, i, c)).
  const auto o = axis_names(out);  // b, i, c or g, i, h, c
  t.split(out->name, o[1], {rows});
  std::vector<std::string> tile_loops = {o[0], split_part(o[1], 0)};
  if (o.size() == 4) {
    t.reorder(out->name, {o[0], o[2], split_part(o[1], 0), split_part(o[1], 1), o[3]});
    tile_loops = {o[0], o[2], split_part(o[1], 0)};
  }
  t.fuse(out->name, tile_loops);
  const std::string tile = fused_name(tile_loops);
  t.parallel(out->name, tile);
  vectorize_last_axis(t, out, lanes);
  // In it, one key tile after another (loop t of the weighted values): per
  // vector of D the rows accumulate in registers over the tile's keys; the
  // tile's scores, maximum, exponentials and sum are computed inside it.
  const auto a = axis_names(values);  // b, i, t, c
  auto place_values = [&] {
    t.compute_at(values->name, out->name, tile);
    rows_times_vectors(t, values, {a[0], a[2]}, lanes, vectors);
  };
  // Consumers first: a stage moves inside its loop once what reads it is there.
  const auto& stages = dag.tensors();
  for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
    const ir::Tensor& stage = *it;
    if (stage->is_placeholder() || stage == out || stage == kt) continue;
    if (stage == values)
      place_values();
    else if (stage->tag == "attention_combine")
      t.compute_at(stage->name, out->name, tile);  // per row, over the few key tiles
    else if (stage->tag == "attention_tile_softmax" && stage->is_reduction())
      place_vector_reduction(t, stage, values->name, a[2], partial);
    else
      t.compute_at(stage->name, values->name, a[2]);
  }
  // Scores per vector of keys (k transposed: contiguous), accumulated over D.
  rows_times_vectors(t, scores, {axis_names(scores)[0]}, lanes, vectors);
  for (const auto& stage : stages)  // the exponentials and probabilities, per vector of the tile's keys
    if (stage->tag == "attention_tile_softmax" && !stage->is_reduction() && stage->shape.size() == 4)
      vectorize_last_axis(t, stage, lanes);
  return t;
}

Trace best_manual_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit) {
  if (find_by_tag(dag, "conv2d_winograd_nchwc")) return winograd_trace(dag, default_winograd_plan(dag, unit));
  if (find_by_tag(dag, "depthwise_conv2d_nchwc") && find_by_tag(dag, "conv2d_nchwc"))
    return depthwise_projection_trace(dag, default_depthwise_projection_plan(dag));
  if (find_by_tag(dag, "conv2d_nchwc")) return conv2d_nchwc_schedule(dag, unit);
  if (find_by_tag(dag, "qlinear_conv2d_nchwc")) return qlinear_conv2d_nchwc_schedule(dag, unit);
  if (ir::Tensor dw = find_by_tag(dag, "qlinear_depthwise_nchwc"))  // as the float one: a row of pixels per vector
    return nchwc_tile_trace(dag, dw->tag, depthwise_nchwc_plan(dw));
  if (find_by_tag(dag, "depthwise_conv2d_nchwc")) return depthwise_nchwc_schedule(dag);
  for (const char* tag : {"pool_max", "pool_sum"})
    if (ir::Tensor pool = find_by_tag(dag, tag); pool && pool->shape.size() == 5) return pool_nchwc_schedule(dag);
  if (find_by_tag(dag, "dense_pack")) return dense_pack_schedule(dag, unit);
  if (find_by_tag(dag, "qlinear_dense_pack")) return qlinear_dense_pack_schedule(dag, unit);
  if (dag.outputs().at(0)->tag == "attention") return attention_schedule(dag, unit);
  if (is_rows_operator(dag)) return rows_schedule(dag, unit);
  for (const char* tag : {"batch_matmul", "qlinear_batch_matmul"})
    if (ir::Tensor mm = find_by_tag(dag, tag))
      return batch_matmul_tile_trace(dag, batch_matmul_default_plan(mm->shape[1], mm->shape[2], unit), tag);
  if (ir::Tensor pool = find_by_tag(dag, "global_pool_sum"); pool && pool->shape.size() == 5)
    return global_pool_nchwc_schedule(dag);
  return default_schedule(dag);
}

}  // namespace tessera::schedule
