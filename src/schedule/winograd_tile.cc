#include "schedule/winograd_tile.h"

#include <algorithm>

#include "schedule/iter_names.h"
#include "schedule/nchwc_tile.h"
#include "tessera/error.h"

namespace tessera::schedule {
namespace {

const char* kPack = "winograd_data_pack";
const char* kProduct = "winograd_bgemm";
const char* kConv = "conv2d_winograd_nchwc";

void schedule_pad(Trace& t, const ir::Tensor& pad) {
  const auto a = axis_names(pad);  // n, chunk, h, w, block
  t.fuse(pad->name, {a[0], a[1]});
  t.parallel(pad->name, fused_name({a[0], a[1]}));
  if (pad->shape[4] > 1) t.vectorize(pad->name, a[4]);
}

void schedule_pack(Trace& t, const ir::Tensor& pack) {
  const auto a = axis_names(pack);  // ab, ico, tile, ii
  t.reorder(pack->name, {a[1], a[2], a[0], a[3]});
  t.fuse(pack->name, {a[1], a[2]});
  t.parallel(pack->name, fused_name({a[1], a[2]}));
  t.unroll(pack->name, a[0]);
  t.vectorize(pack->name, a[3]);
}

void schedule_product(Trace& t, const ir::Tensor& product, const WinogradPlan& plan) {
  const auto a = axis_names(product);    // ab, oco, tile, ob
  const auto r = reduce_names(product);  // rco, rci
  const std::string local = cache_write_name(product->name);
  t.cache_write(product->name);
  std::vector<std::string> outer = {a[0]}, inner;
  auto cut = [&](size_t axis, int64_t size) {
    if (size <= 1) {
      outer.push_back(a[axis]);
      return;
    }
    t.split(product->name, a[axis], {size});
    outer.push_back(split_part(a[axis], 0));
    inner.push_back(split_part(a[axis], 1));
  };
  cut(1, plan.tile_oc);
  cut(2, plan.tile_t);
  std::vector<std::string> order = outer;
  order.insert(order.end(), inner.begin(), inner.end());
  order.push_back(a[3]);
  t.reorder(product->name, order);
  t.fuse(product->name, outer);
  t.parallel(product->name, fused_name(outer));
  for (const auto& i : inner) t.unroll(product->name, i);
  t.vectorize(product->name, a[3]);
  t.compute_at(local, product->name, fused_name(outer));

  t.reorder(local, {a[0], r[0], r[1], a[1], a[2], a[3]});
  if (plan.tile_oc > 1) t.unroll(local, a[1]);
  t.unroll(local, a[2]);
  t.vectorize(local, a[3]);
}

void schedule_output(Trace& t, const ir::Tensor& out, int64_t m) {
  const auto o = axis_names(out);  // n, chunk, oh, ow, block
  t.split(out->name, o[2], {m});
  t.split(out->name, o[3], {m});
  const std::vector<std::string> outer = {o[0], o[1], split_part(o[2], 0)};
  t.reorder(out->name,
            {o[0], o[1], split_part(o[2], 0), split_part(o[3], 0), split_part(o[2], 1), split_part(o[3], 1), o[4]});
  t.fuse(out->name, outer);
  t.parallel(out->name, fused_name(outer));
  t.unroll(out->name, split_part(o[2], 1));
  t.unroll(out->name, split_part(o[3], 1));
  t.vectorize(out->name, o[4]);
}

}  // namespace

WinogradPlan default_winograd_plan(const ir::ComputeDAG& dag, const VectorUnit& unit) {
  const ir::Tensor product = stage_by_tag(dag, kProduct, "default_winograd_plan");
  const int64_t chunks = product->shape[1], tiles = product->shape[2];
  if (unit.broadcast_operand()) {
    const RegisterTile tile = nchwc_register_tile(chunks, product->shape[3], tiles, unit);
    return {.tile_oc = tile.oc, .tile_t = tile.ow};
  }
  // Eight accumulators: measured on Zen 3 (AVX2, blocks of 8) over ResNet's
  // 3x3 layers, 4 chunks x 2 tiles or 2 x 4 beat the twelve of 4 x 3 by
  // 10-25 % and every one-chunk tile.
  const int64_t lanes = unit.lanes();
  const int64_t vectors = std::max<int64_t>(1, product->shape[3] / lanes);
  WinogradPlan plan;
  for (int64_t oc : {4, 2, 1})
    if (chunks % oc == 0 && oc * vectors <= 4) {
      plan.tile_oc = oc;
      break;
    }
  plan.tile_t = std::clamp<int64_t>(8 / (plan.tile_oc * vectors), 1, tiles);
  return plan;
}

Trace winograd_trace(const ir::ComputeDAG& dag, const WinogradPlan& plan) {
  const ir::Tensor conv = stage_by_tag(dag, kConv, "winograd_trace");
  const ir::Tensor out = dag.outputs().at(0);
  const int64_t m = std::stoll(conv->attrs.at("tile"));
  Trace t;
  for (const auto& s : dag.tensors()) {
    if (s->is_placeholder()) continue;
    if (s->tag == "pad")
      schedule_pad(t, s);
    else if (s->tag == kPack)
      schedule_pack(t, s);
    else if (s->tag == kProduct)
      schedule_product(t, s, plan);
    else if (s == out)
      schedule_output(t, s, m);
    else
      t.compute_inline(s->name);  // the output transform and epilogue stages before the last
  }
  return t;
}

}  // namespace tessera::schedule
