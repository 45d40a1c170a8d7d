#include "schedule/dense_pack_tile.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "schedule/iter_names.h"
#include "schedule/nchwc_tile.h"

namespace tessera::schedule {

int64_t dense_pack_tile(int64_t blocks, int64_t bn, const VectorUnit& unit) {
  // About 12 vector accumulators: enough independent FMA chains to hide latency.
  const int64_t lanes = unit.lanes();
  const int64_t vectors_per_block = (bn + lanes - 1) / lanes;
  for (int64_t d = std::min(blocks, std::max<int64_t>(1, 12 / vectors_per_block)); d > 1; --d)
    if (blocks % d == 0) return d;
  return 1;
}

std::vector<int64_t> dense_pack_block_parts(int64_t bn, const VectorUnit& unit) {
  const int64_t lanes = unit.lanes();
  std::vector<int64_t> parts;
  for (int64_t part = bn / 2; part >= lanes && part % lanes == 0 && bn % part == 0; part /= 2) parts.push_back(part);
  return parts;
}

namespace {
// Enough column tiles to split evenly over a few threads.
constexpr int64_t kBalancedColumnTiles = 8;
// A core's L2 on the x86 CPUs we run on: 512 KiB (Zen 2/3) to 2 MiB (Xeon).
constexpr int64_t kL2Bytes = 1 << 20;
}  // namespace

DensePackPlan dense_pack_default_plan(int64_t m, int64_t k, int64_t blocks, int64_t bn, const VectorUnit& unit) {
  if (m == 1) return {.tx = dense_pack_tile(blocks, bn, unit)};
  const int64_t lanes = unit.lanes();
  const int64_t vectors_per_block = (bn + lanes - 1) / lanes;
  // Three quarters of the registers accumulate; the rest hold the weight
  // vectors and the rows' broadcasts (AVX-512: 6 rows x 4 vectors).
  const int64_t accumulators = std::max(1, unit.registers * 3 / 4);
  const int64_t rows = std::min<int64_t>(m, 6);
  DensePackPlan plan;
  // A block too wide for `rows` rows of accumulators: the widest part of it that is not.
  int64_t vectors_per_tile = vectors_per_block;
  if (vectors_per_block * rows > accumulators)
    for (int64_t part : dense_pack_block_parts(bn, unit))
      if (part / lanes * rows <= accumulators) {
        plan.lanes = part;
        vectors_per_tile = part / lanes;
        break;
      }
  plan.ty = std::clamp<int64_t>(accumulators / vectors_per_tile, 1, rows);
  plan.tx = 1;  // a part of a block: one block per tile
  for (int64_t d = plan.lanes ? 1 : accumulators / (plan.ty * vectors_per_block); d > 1; --d)
    if (blocks % d == 0) {
      plan.tx = d;
      break;
    }
  if (k % 8 == 0) plan.tk = 8, plan.unroll_k = true;
  // Column tiles outermost and parallel keep a weight block in cache while
  // every row passes it, but only a few of them (a narrow N: ConvNeXt's
  // 384 -> 96 and 768 -> 192) split unevenly over the threads, 3 tiles over
  // 2 taking the time of 4. Where the whole weight stays in a core's L2
  // anyway, the row and column tiles run fused instead: every thread gets
  // its share, and each row tile meets the weight in cache.
  const int64_t column_tiles = plan.lanes ? blocks * (bn / plan.lanes) : blocks / plan.tx;
  const bool weight_in_l2 = k * blocks * bn * static_cast<int64_t>(sizeof(float)) <= kL2Bytes;
  plan.parallel = column_tiles < kBalancedColumnTiles && weight_in_l2 ? "fused" : "cols";
  return plan;
}

Trace dense_pack_tile_trace(const ir::ComputeDAG& dag, const DensePackPlan& plan, const std::string& tag) {
  const ir::Tensor dense = stage_by_tag(dag, tag, "dense_pack_tile_trace");
  const ir::Tensor out = dag.outputs().at(0);
  const int64_t bn = std::stoll(dense->attrs.at("bn"));
  const int64_t ty = plan.ty, tx = plan.tx, tk = plan.tk;
  const int64_t part = plan.lanes > 0 && plan.lanes < bn ? plan.lanes : bn;  // columns of a block per tile
  const std::string& parallel = plan.parallel;

  Trace t;
  for (const auto& s : dag.tensors())
    if (!s->is_placeholder() && s != dense && s != out) t.compute_inline(s->name);
  std::string acc = dense->name;
  if (dense == out) {
    t.cache_write(dense->name);
    acc = cache_write_name(dense->name);
  }
  const auto o = axis_names(out);  // i, j
  std::string i_outer = o[0];
  if (ty > 1) {
    t.split(out->name, o[0], {ty});
    i_outer = split_part(o[0], 0);
  }
  t.split(out->name, o[1], {tx, bn});  // j.0: tiles, j.1: blocks in a tile, j.2: lanes of a block
  const std::string j0 = split_part(o[1], 0), j1 = split_part(o[1], 1);
  std::string lanes = split_part(o[1], 2);
  // The loops outside the tile (the accumulator is computed at the last), then the tile's.
  std::vector<std::string> outer = {i_outer, j0}, tile = {j1, lanes};
  if (parallel == "cols") std::swap(outer[0], outer[1]);
  if (part < bn) {
    t.split(out->name, lanes, {part});  // j.2.0: parts of a block, j.2.1: their lanes
    const std::string parts = split_part(lanes, 0);
    lanes = split_part(lanes, 1);
    // The blocks and their parts outside the rows: every row tile reuses one part's weights.
    outer.insert(outer.begin() + (parallel == "cols" ? 1 : 2), {j1, parts});
    tile = {lanes};
  }
  std::vector<std::string> order = outer;
  if (ty > 1) order.push_back(split_part(o[0], 1));
  order.insert(order.end(), tile.begin(), tile.end());
  if (order != std::vector<std::string>{i_outer, j0, j1, lanes}) t.reorder(out->name, order);
  std::string attach = outer.back();
  if (parallel == "fused") {
    t.fuse(out->name, {order[0], order[1]});
    if (attach == order[1]) attach = fused_name({order[0], order[1]});
    t.parallel(out->name, fused_name({order[0], order[1]}));
  } else {
    t.parallel(out->name, order[0]);
  }
  t.vectorize(out->name, lanes);
  t.compute_at(acc, out->name, attach);

  const auto d = axis_names(dense);
  const std::string k = reduce_names(dense)[0];
  const std::string bytes = dense->reduce_axes.size() == 2 ? reduce_names(dense)[1] : "";
  t.split(acc, d[1], {part});
  std::vector<std::string> reduce = {k};
  if (tk > 1) {
    t.split(acc, k, {tk});
    reduce = {split_part(k, 0), split_part(k, 1)};
  }
  // One row: i stays outside K (extent 1), as in the hand-written schedule.
  std::vector<std::string> acc_order;
  if (ty == 1) acc_order.push_back(d[0]);
  acc_order.insert(acc_order.end(), reduce.begin(), reduce.end());
  if (ty > 1) acc_order.push_back(d[0]);
  acc_order.push_back(split_part(d[1], 0));
  if (!bytes.empty()) acc_order.push_back(bytes);
  acc_order.push_back(split_part(d[1], 1));
  t.reorder(acc, acc_order);
  if (!bytes.empty()) t.annotate(acc, bytes, Annotation::DotProduct);
  t.unroll(acc, split_part(d[1], 0));
  if (ty > 1) t.unroll(acc, d[0]);
  if (tk > 1 && plan.unroll_k) t.unroll(acc, split_part(k, 1));
  t.vectorize(acc, split_part(d[1], 1));
  return t;
}

}  // namespace tessera::schedule
