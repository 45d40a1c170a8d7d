#include "schedule/nchwc_tile.h"

#include <algorithm>

#include "tessera/error.h"

namespace tessera::schedule {

ir::Tensor stage_by_tag(const ir::ComputeDAG& dag, const std::string& tag, const std::string& who) {
  for (const auto& t : dag.tensors())
    if (t->tag == tag) return t;
  throw Error(who + ": the workload has no " + tag + " stage");
}

std::vector<std::string> axis_names(const ir::Tensor& t) {
  std::vector<std::string> names;
  for (const auto& a : t->axes) names.push_back(a.var.name());
  return names;
}

std::vector<std::string> reduce_names(const ir::Tensor& t) {
  std::vector<std::string> names;
  for (const auto& a : t->reduce_axes) names.push_back(a.var.name());
  return names;
}

int64_t nchwc_chunks_per_group(const ir::Tensor& conv) {
  const auto groups = conv->attrs.find("groups");
  return groups == conv->attrs.end() ? conv->shape[1] : conv->shape[1] / std::stoll(groups->second);
}

RegisterTile nchwc_register_tile(int64_t chunks, int64_t block, int64_t width, const VectorUnit& unit,
                                 int64_t group_chunks) {
  const int64_t lanes = unit.lanes();
  const int64_t vectors_per_block = std::max<int64_t>(1, (block + lanes - 1) / lanes);
  width = std::max<int64_t>(width, 1);
  RegisterTile tile;
  if (unit.broadcast_operand()) {
    // Measured on AVX-512 (64->64 3x3, 56x56): 14 columns of one zmm beat 7, 8
    // and 28; the remaining registers hold weights.
    const int64_t most = std::max<int64_t>(1, 24 / vectors_per_block);
    for (int64_t d = std::min(width, most); d >= 1; --d)
      if (width % d == 0) return {1, d};
    return tile;
  }
  // Three where neither four nor two divides: RegNet's widths (72, 168, 408
  // channels: 9, 21, 51 chunks of 8) would otherwise reuse no broadcast at all.
  // 408 -> 408 1x1 at 14x14 on 2 Zen 3 cores: 0.65 -> 0.52 ms (oneDNN 0.42).
  // Grouped, within a group: its 912 channels are 38 groups of 3 chunks.
  if (group_chunks <= 0) group_chunks = chunks;
  for (int64_t oc : {4, 2, 3, 1})
    if (group_chunks % oc == 0) {
      tile.oc = oc;
      break;
    }
  // Registers: oc x ow x vectors_per_block accumulators, one weight block, and
  // the broadcasts: ow of them stay live while several blocks reuse them, one
  // when each is used once.
  auto fits = [&](int64_t ow) {
    const int64_t broadcasts = tile.oc > 1 ? ow : 1;
    return tile.oc * ow * vectors_per_block + vectors_per_block + broadcasts <= unit.registers;
  };
  tile.ow = 1;
  while (tile.ow < width && fits(tile.ow + 1)) ++tile.ow;
  return tile;
}

std::vector<int64_t> accumulator_row_choices(int64_t rows, int64_t width) {
  std::vector<int64_t> choices;
  for (int64_t r = 1; r <= rows; ++r)
    if (rows % r == 0 && r * width <= 256) choices.push_back(r);
  return choices;
}

AccumulatorBuffer default_accumulator_buffer(const ir::Tensor& conv, const RegisterTile& tile) {
  // fp32 (ic_outer, ry, rx, ic_inner), or int8 with ic_4 after them: 4-byte
  // or 1-byte weights.
  if (conv->reduce_axes.size() != 4 && conv->reduce_axes.size() != 5) return {};
  const int64_t rows = conv->shape[2], width = conv->shape[3];
  const int64_t weight_bytes = conv->reduce_axes.size() == 5 ? 1 : 4;
  int64_t weights = tile.oc * conv->shape[4] * weight_bytes;  // bytes a register tile reads
  for (const auto& r : conv->reduce_axes) weights *= r.extent;
  if (conv->reduce_axes[1].extent * conv->reduce_axes[2].extent == 1) {
    // 1x1 over flattened positions whose tile's weights outgrow a 32 KB L1:
    // groups of at most 128 positions, 8 input-channel blocks per pass.
    if (rows != 1 || weights <= 32 * 1024) return {};
    int64_t cols = 1;
    for (int64_t c = std::min<int64_t>(width, 128); c >= 1; --c)
      if (width % c == 0) {
        cols = c;
        break;
      }
    return {.rows = 1, .cols = cols, .ic_blocks = 8};
  }
  if (weights <= 256 * 1024) return {};
  const std::vector<int64_t> choices = accumulator_row_choices(rows, width);
  return {.rows = choices.empty() ? 0 : choices.back()};
}

int default_parallel_fuse(const ir::Tensor& conv, RegisterTile& tile) {
  const int64_t outer = conv->shape[0] * (conv->shape[1] / std::max<int64_t>(tile.oc, 1)) * conv->shape[2];
  const int64_t width = conv->shape[3];
  if (outer >= 16) return 3;
  for (int64_t ow = tile.ow; ow >= std::max<int64_t>(2, tile.ow - 2); --ow)
    if (width % ow == 0) {
      tile.ow = ow;
      return 4;
    }
  return 3;
}

namespace {

// An int8 stage's byte axis (its fifth reduce axis) goes just outside the
// channel block, which tile_order ends with.
NchwcTilePlan with_byte_dot_product(const ir::Tensor& conv, NchwcTilePlan plan) {
  const auto r = reduce_names(conv);
  if (r.size() != 5) return plan;
  plan.dot_product = r[4];
  plan.tile_order.insert(plan.tile_order.end() - 1, r[4]);
  return plan;
}

// conv_window_tile_plan with the reduction's outer loop outside the tile's
// rows and columns (buffer.rows > 0).
NchwcTilePlan buffered_rows_plan(const ir::Tensor& conv, NchwcTilePlan plan, const std::vector<int>& reduce_order,
                                 bool unroll_kw) {
  const auto a = axis_names(conv);    // n, oc_chunk, oh, ow, oc_block
  const auto r = reduce_names(conv);  // ic_outer, ry, rx, ic_inner
  const std::string oh_outer = plan.oh_bn > 1 ? split_part(a[2], 0) : a[2];
  // Input-channel blocks per pass: one (ic_outer outermost), all (ic_outer
  // inside the rows and columns), or a split.
  const int64_t blocks = conv->reduce_axes[0].extent, per_pass = std::clamp<int64_t>(plan.buffer.ic_blocks, 1, blocks);
  plan.tile_order = {a[0]};
  if (per_pass == 1) plan.tile_order.push_back(r[0]);
  if (per_pass > 1 && per_pass < blocks) plan.tile_order.push_back(split_part(r[0], 0));
  plan.tile_order.insert(plan.tile_order.end(), {oh_outer, split_part(a[3], 0)});
  if (per_pass > 1 && per_pass < blocks) plan.tile_order.push_back(split_part(r[0], 1));
  if (per_pass == blocks && blocks > 1) plan.tile_order.push_back(r[0]);
  for (int i : reduce_order)
    if (i != 0) plan.tile_order.push_back(r.at(i));
  plan.tile_order.insert(plan.tile_order.end(), {r[3], a[1]});
  if (plan.oc_bn > 1) plan.tile_unroll.push_back(a[1]);
  if (plan.oh_bn > 1) {
    plan.tile_order.push_back(split_part(a[2], 1));
    plan.tile_unroll.push_back(split_part(a[2], 1));
  }
  plan.tile_order.insert(plan.tile_order.end(), {split_part(a[3], 1), a[4]});
  plan.tile_unroll.push_back(split_part(a[3], 1));
  if (unroll_kw) plan.tile_unroll.push_back(r.at(2));
  return plan;
}

}  // namespace

NchwcTilePlan conv_window_tile_plan(const ir::Tensor& conv, int64_t oc_bn, int64_t oh_bn, int64_t ow_bn,
                                    const std::vector<int>& reduce_order, bool unroll_kw, AccumulatorBuffer buffer) {
  const auto a = axis_names(conv);    // n, oc_chunk, oh, ow, oc_block
  const auto r = reduce_names(conv);  // ic_outer, ry, rx, ic_inner
  NchwcTilePlan plan;
  plan.oc_bn = oc_bn, plan.oh_bn = oh_bn, plan.ow_bn = ow_bn, plan.buffer = buffer;
  if (buffer.rows > 0) return with_byte_dot_product(conv, buffered_rows_plan(conv, plan, reduce_order, unroll_kw));
  // Several chunks or rows: inside the reduction, unrolled with ow.
  plan.tile_order = nchwc_outer_tile_axes(plan, a);
  for (int i : reduce_order) plan.tile_order.push_back(r.at(i));
  plan.tile_order.push_back(r.at(3));
  if (oc_bn > 1) {
    plan.tile_order.push_back(a[1]);
    plan.tile_unroll.push_back(a[1]);
  }
  if (oh_bn > 1) {
    plan.tile_order.push_back(a[2]);
    plan.tile_unroll.push_back(a[2]);
  }
  plan.tile_order.push_back(a[3]);
  plan.tile_order.push_back(a[4]);
  plan.tile_unroll.push_back(a[3]);
  if (unroll_kw) plan.tile_unroll.push_back(r.at(2));
  return with_byte_dot_product(conv, plan);
}

std::vector<std::string> nchwc_outer_tile_axes(const NchwcTilePlan& plan, const std::vector<std::string>& axes) {
  std::vector<std::string> outer = {axes.at(0)};
  if (plan.oc_bn == 1) outer.push_back(axes.at(1));
  if (plan.oh_bn == 1) outer.push_back(axes.at(2));
  return outer;
}

namespace {

// With pad == "tile", the padding is computed at the tile's outermost reduce
// loop.
void place_pad(Trace& t, const ir::Tensor& conv, const std::string& pad_stage, const std::string& tile,
               const NchwcTilePlan& plan) {
  if (plan.pad != "tile" || pad_stage.empty()) return;
  const auto reduces = reduce_names(conv);
  auto first = std::find_if(plan.tile_order.begin(), plan.tile_order.end(), [&](const std::string& n) {
    return std::find(reduces.begin(), reduces.end(), n) != reduces.end();
  });
  t.compute_at(pad_stage, tile, *first);
}

// buffer.rows > 0: the output is cut into groups of oc_bn chunks x rows x
// columns of the buffer (the parallel loop runs over them) and written from the
// tile stage's buffer; the tile stage, computed there, is cut into register
// tiles itself.
void buffered_rows_tile(Trace& t, const ir::Tensor& conv, const ir::Tensor& out, const std::string& tile,
                        const NchwcTilePlan& plan) {
  const auto o = axis_names(out);  // n, chunk, oh, ow, block
  std::vector<std::string> outer = {o[0]}, inner;
  auto group = [&](size_t axis, int64_t size) {
    if (size >= out->shape[axis]) {
      inner.push_back(o[axis]);
      return;
    }
    t.split(out->name, o[axis], {size});
    outer.push_back(split_part(o[axis], 0));
    inner.push_back(split_part(o[axis], 1));
  };
  if (plan.oc_bn == 1)
    outer.push_back(o[1]);
  else
    group(1, plan.oc_bn);
  group(2, plan.buffer.rows);
  group(3, plan.buffer.cols > 0 ? plan.buffer.cols : out->shape[3]);
  std::vector<std::string> order = outer;
  order.insert(order.end(), inner.begin(), inner.end());
  order.push_back(o[4]);
  t.reorder(out->name, order);
  // n x chunk groups, and the row and column groups too unless parallel_fuse
  // is 2.
  const size_t parallel = plan.parallel_fuse == 2 ? std::min<size_t>(2, outer.size()) : outer.size();
  const std::vector<std::string> fused(outer.begin(), outer.begin() + parallel);
  if (fused.size() > 1) t.fuse(out->name, fused);
  t.parallel(out->name, fused_name(fused));
  t.vectorize(out->name, o[4]);
  t.compute_at(tile, out->name, parallel == outer.size() ? fused_name(fused) : outer.back());

  const auto a = axis_names(conv);  // the tile stage's n, chunk, oh, ow, block
  if (plan.buffer.ic_blocks > 1 && plan.buffer.ic_blocks < conv->reduce_axes[0].extent)
    t.split(tile, reduce_names(conv)[0], {plan.buffer.ic_blocks});
  if (plan.oh_bn > 1) t.split(tile, a[2], {plan.oh_bn});
  t.split(tile, a[3], {plan.ow_bn});
  t.reorder(tile, plan.tile_order);
  for (const auto& u : plan.tile_unroll) t.unroll(tile, u);
  t.vectorize(tile, a[4]);
  if (!plan.dot_product.empty()) t.annotate(tile, plan.dot_product, Annotation::DotProduct);
}

}  // namespace

schedule::Trace nchwc_tile_trace(const ir::ComputeDAG& dag, const std::string& tag, const NchwcTilePlan& plan) {
  const ir::Tensor conv = stage_by_tag(dag, tag, "nchwc_tile_trace");
  const ir::Tensor out = dag.outputs().at(0);
  schedule::Trace t;
  std::string pad_stage;
  for (const auto& s : dag.tensors()) {
    if (s->is_placeholder() || s == conv || s == out) continue;
    if (s->tag != "pad") {
      t.compute_inline(s->name);  // epilogue stages before the last fold into it
      continue;
    }
    pad_stage = s->name;
    if (plan.pad == "root") {
      // Parallel over channel chunks; rows and columns stay serial loops so
      // that tir::partition_loops cuts them into borders (zeros) and an
      // interior (a plain copy, vectorised over the channel block).
      auto a = axis_names(s);
      t.fuse(s->name, {a[0], a[1]});
      t.parallel(s->name, fused_name({a[0], a[1]}));
      if (s->shape[4] > 1) t.vectorize(s->name, a[4]);
    } else if (plan.pad == "inline") {
      t.compute_inline(s->name);
    }
  }

  // The accumulator tile: the conv's cache, or the conv itself when an
  // epilogue stage is the one writing memory.
  std::string tile = conv->name;
  if (conv == out) {
    t.cache_write(conv->name);
    tile = cache_write_name(conv->name);
  }
  const auto o = axis_names(out);  // n, chunk, oh, ow, block
  if (plan.buffer.rows > 0) {
    buffered_rows_tile(t, conv, out, tile, plan);
    place_pad(t, conv, pad_stage, tile, plan);
    return t;
  }
  std::string chunk = o[1], oh = o[2];
  if (plan.oc_bn > 1) {
    t.split(out->name, o[1], {plan.oc_bn});
    chunk = split_part(o[1], 0);
  }
  if (plan.oh_bn > 1) {
    t.split(out->name, o[2], {plan.oh_bn});
    oh = split_part(o[2], 0);
  }
  t.split(out->name, o[3], {plan.ow_bn});
  // The tile's loops (chunk.1, oh.1, ow.1, block) go inside the outer ones so
  // that the tile stage, computed at ow.0, covers all of them.
  if (plan.oc_bn > 1 || plan.oh_bn > 1) {
    std::vector<std::string> order = {o[0], chunk, oh, split_part(o[3], 0)};
    if (plan.oc_bn > 1) order.push_back(split_part(o[1], 1));
    if (plan.oh_bn > 1) order.push_back(split_part(o[2], 1));
    order.insert(order.end(), {split_part(o[3], 1), o[4]});
    t.reorder(out->name, order);
  }
  std::vector<std::string> outer = {o[0], chunk, oh, split_part(o[3], 0)};
  outer.resize(std::clamp(plan.parallel_fuse, 1, 4));
  const std::string fused = fused_name(outer);
  if (outer.size() > 1) t.fuse(out->name, outer);
  t.parallel(out->name, fused);
  // The tile is written out unrolled, straight from its registers (a loop
  // over it would need the tile in addressable stack memory).
  if (plan.oc_bn > 1) t.unroll(out->name, split_part(o[1], 1));
  if (plan.oh_bn > 1) t.unroll(out->name, split_part(o[2], 1));
  t.unroll(out->name, split_part(o[3], 1));
  t.vectorize(out->name, o[4]);
  t.compute_at(tile, out->name, outer.size() == 4 ? fused : split_part(o[3], 0));

  t.reorder(tile, plan.tile_order);
  for (const auto& u : plan.tile_unroll) t.unroll(tile, u);
  t.vectorize(tile, axis_names(conv)[4]);
  if (!plan.dot_product.empty()) t.annotate(tile, plan.dot_product, Annotation::DotProduct);
  place_pad(t, conv, pad_stage, tile, plan);
  return t;
}

}  // namespace tessera::schedule
