#include "autotvm/x86/schedule_util.h"

#include <algorithm>

#include "ops/layout.h"
#include "tessera/error.h"

namespace tessera::autotvm::x86 {

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

std::string fused_name(const std::vector<std::string>& iters) {
  std::string s;
  for (const auto& i : iters) s += (s.empty() ? "" : "@") + i;
  return s;
}

int64_t vector_lanes(const codegen::Target& target) { return std::max(1, target.vector_bits / 32); }

int64_t channel_block(int64_t channels, const codegen::Target& target) {
  return ops::choose_channel_block(channels, vector_lanes(target));
}

std::vector<int64_t> divisors_up_to(int64_t n, int64_t limit) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= std::min(n, limit); ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

std::vector<int64_t> split_lengths(const schedule::Trace& trace, const std::string& stage, const std::string& iter) {
  for (const auto& step : trace.steps())
    if (auto* s = std::get_if<schedule::SplitStep>(&step); s && s->stage == stage && s->iter == iter) return s->lengths;
  throw Error("schedule has no split of " + stage + "." + iter);
}

std::vector<std::string> nchwc_outer_tile_axes(const NchwcTilePlan& plan, const std::vector<std::string>& axes) {
  std::vector<std::string> outer = {axes.at(0)};
  if (plan.oc_bn == 1) outer.push_back(axes.at(1));
  if (plan.oh_bn == 1) outer.push_back(axes.at(2));
  return outer;
}

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
      auto a = axis_names(s);
      t.fuse(s->name, {a[0], a[1], a[2]});
      t.parallel(s->name, fused_name({a[0], a[1], a[2]}));
    } else if (plan.pad == "inline") {
      t.compute_inline(s->name);
    }
  }

  // The accumulator tile: the conv's cache, or the conv itself when an
  // epilogue stage is the one writing memory.
  std::string tile = conv->name;
  if (conv == out) {
    t.cache_write(conv->name);
    tile = conv->name + ".local";
  }
  const auto o = axis_names(out);  // n, chunk, oh, ow, block
  std::string chunk = o[1], oh = o[2];
  if (plan.oc_bn > 1) {
    t.split(out->name, o[1], {plan.oc_bn});
    chunk = o[1] + ".0";
  }
  if (plan.oh_bn > 1) {
    t.split(out->name, o[2], {plan.oh_bn});
    oh = o[2] + ".0";
  }
  t.split(out->name, o[3], {plan.ow_bn});
  // The tile's loops (chunk.1, oh.1, ow.1, block) go inside the outer ones so
  // that the tile stage, computed at ow.0, covers all of them.
  if (plan.oc_bn > 1 || plan.oh_bn > 1) {
    std::vector<std::string> order = {o[0], chunk, oh, o[3] + ".0"};
    if (plan.oc_bn > 1) order.push_back(o[1] + ".1");
    if (plan.oh_bn > 1) order.push_back(o[2] + ".1");
    order.insert(order.end(), {o[3] + ".1", o[4]});
    t.reorder(out->name, order);
  }
  std::vector<std::string> outer = {o[0], chunk, oh, o[3] + ".0"};
  outer.resize(std::clamp(plan.parallel_fuse, 1, 4));
  const std::string fused = fused_name(outer);
  if (outer.size() > 1) t.fuse(out->name, outer);
  t.parallel(out->name, fused);
  t.vectorize(out->name, o[4]);
  t.compute_at(tile, out->name, outer.size() == 4 ? fused : o[3] + ".0");

  t.reorder(tile, plan.tile_order);
  for (const auto& u : plan.tile_unroll) t.unroll(tile, u);
  t.vectorize(tile, axis_names(conv)[4]);
  if (plan.pad == "tile" && !pad_stage.empty()) {
    const auto reduces = reduce_names(conv);
    auto first = std::find_if(plan.tile_order.begin(), plan.tile_order.end(), [&](const std::string& n) {
      return std::find(reduces.begin(), reduces.end(), n) != reduces.end();
    });
    t.compute_at(pad_stage, tile, *first);
  }
  return t;
}

}  // namespace tessera::autotvm::x86
