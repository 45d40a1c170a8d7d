#include "autoschedule/cpu_sketch_rules.h"

#include "autoschedule/stage_analysis.h"
#include <optional>

#include "schedule/iter_names.h"
#include "schedule/stage_steps.h"

namespace tessera::autoschedule {

using schedule::split_part;

SketchRule::Condition AlwaysInline::condition(const SketchContext&, const SketchBuilder& b, int stage) const {
  return is_strictly_inlineable(b.state(), stage) ? Condition::ApplyAndSkipRest : Condition::Pass;
}

std::vector<std::pair<SketchBuilder, int>> AlwaysInline::apply(const SketchContext&, const SketchBuilder& b,
                                                               int stage) const {
  SketchBuilder n = b;
  const std::string name = b.stage(stage).name();
  n.add(schedule::ComputeInlineStep{name});
  n.note(name + ": inlined");
  return {{std::move(n), stage - 1}};
}

SketchRule::Condition AddRfactor::condition(const SketchContext& ctx, const SketchBuilder& b, int stage) const {
  const schedule::Stage& s = b.stage(stage);
  if (!s.tensor->is_reduction() || !untouched(s) || needs_multi_level_tiling(b.state(), stage))
    return Condition::Pass;
  const auto reduce = names_of(s, ir::IterKind::Reduce);
  const int64_t extent = s.iters[s.iter_index(reduce.back())].extent;
  return extent >= 2 * ctx.target.vector_lanes() ? Condition::Apply : Condition::Pass;
}

std::vector<std::pair<SketchBuilder, int>> AddRfactor::apply(const SketchContext&, const SketchBuilder& b,
                                                             int stage) const {
  SketchBuilder n = b;
  const schedule::Stage& s = b.stage(stage);
  const std::string name = s.name(), axis = names_of(s, ir::IterKind::Reduce).back();
  const std::string rf = schedule::rfactor_name(name), inner = schedule::rfactor_inner(axis);
  // Lengths (a, b) of the slot: the rf stage keeps a * b partial results,
  // a outer (parallel) and b inner (a vector) around the rest of the reduction.
  const int slot = n.add_slot(TileSlot{rf, inner, s.iters[s.iter_index(axis)].extent, 2, false});
  n.rfactor(name, axis, slot);
  n.follow(rf, inner, slot, {1}, 1);
  std::vector<std::string> outer, reduce;
  for (const auto& it : n.stage(stage).iters) {
    if (it.kind == ir::IterKind::Reduce) reduce.push_back(it.name);
    else if (it.name != split_part(inner, 0) && it.name != split_part(inner, 1)) outer.push_back(it.name);
  }
  outer.push_back(split_part(inner, 0));
  const auto order = concat({outer, reduce, {split_part(inner, 1)}});
  n.add(schedule::ReorderStep{rf, order});
  Sketch& sites = n.sites();
  sites.parallel.push_back({rf, outer});
  sites.vectorize.push_back({rf, split_part(inner, 1)});
  sites.unroll.push_back({rf, order.front()});
  // The partial results of one output row can be made where it is reduced.
  std::vector<std::string> rows;
  for (const auto& it : n.stage(stage + 1).iters)
    if (it.kind == ir::IterKind::Spatial) rows.push_back(it.name);
  if (!rows.empty()) sites.locations.push_back({rf, name, rows});
  n.mark_structured(rf);
  n.note(name + ": rfactor over " + axis + " into " + rf);
  return {{std::move(n), stage - 1}};
}

namespace {

// Multi-level tiling of producer `stage` fused into its elementwise consumer
// at `level` (1 or 2): each of the producer's spatial axes `psp` (the
// consumer's `csp`) tiled (l1, l2, l3), the consumer's loops the outer
// `level` of them (then `consumer_tail`, axes it keeps whole), the producer
// computed in one of its tiles and split by the inner ones, its reduce axes
// `prd` split once; the producer's loops in the order SRSRS (level 1) or
// RSRS (level 2), then `producer_tail`. Adds the consumer's parallel site;
// the caller adds the rest.
void fuse_into_consumer(SketchBuilder& n, const SketchBuilder& b, int stage, int consumer,
                        const std::vector<std::string>& psp, const std::vector<std::string>& prd,
                        const std::vector<std::string>& csp, const std::vector<std::string>& consumer_tail,
                        const std::vector<std::string>& producer_tail, int level) {
  const std::string p = b.stage(stage).name(), c = b.stage(consumer).name();
  for (size_t i = 0; i < psp.size(); ++i) {
    const auto& it = b.stage(stage).iters[b.stage(stage).iter_index(psp[i])];
    const int slot = n.add_slot(TileSlot{p, psp[i], it.extent, 3, false});
    n.follow(c, csp[i], slot, level == 1 ? std::vector<int>{3} : std::vector<int>{1, 2});
    n.follow(p, psp[i], slot, level == 1 ? std::vector<int>{1, 1} : std::vector<int>{1}, level);
  }
  for (const auto& r : prd) n.tile(p, r, 1);
  std::vector<std::string> consumer_order, parallel;
  for (int part = 0; part <= level; ++part) {
    const auto loops = parts(csp, part);
    consumer_order.insert(consumer_order.end(), loops.begin(), loops.end());
    if (part < level) parallel.insert(parallel.end(), loops.begin(), loops.end());
  }
  n.add(schedule::ReorderStep{c, concat({consumer_order, consumer_tail})});
  const auto producer_order =
      level == 1 ? concat({parts(psp, 0), parts(prd, 0), parts(psp, 1), parts(prd, 1), parts(psp, 2), producer_tail})
                 : concat({parts(prd, 0), parts(psp, 0), parts(prd, 1), parts(psp, 1), producer_tail});
  n.add(schedule::ReorderStep{p, producer_order});
  n.add(schedule::ComputeAtStep{p, c, split_part(csp.back(), level - 1)});
  n.sites().parallel.push_back({c, parallel});
  n.sites().unroll.push_back({p, producer_order.front()});
}

}  // namespace

SketchRule::Condition MultiLevelTilingWithByteDotProduct::condition(const SketchContext&, const SketchBuilder& b,
                                                                     int stage) const {
  const auto& state = b.state();
  return untouched(b.stage(stage)) && needs_multi_level_tiling(state, stage) && byte_dot_product_axes(state, stage)
             ? Condition::ApplyAndSkipRest
             : Condition::Pass;
}

std::vector<std::pair<SketchBuilder, int>> MultiLevelTilingWithByteDotProduct::apply(const SketchContext&,
                                                                                     const SketchBuilder& b,
                                                                                     int stage) const {
  const ByteDotProductAxes dot = *byte_dot_product_axes(b.state(), stage);
  const std::string p = b.stage(stage).name();
  // The tiled axes: all but the lanes (the last spatial axis) and the 4 bytes
  // (the last reduce axis), which stay whole, innermost.
  auto without_last = [](std::vector<std::string> v) {
    v.pop_back();
    return v;
  };
  const auto psp = without_last(names_of(b.stage(stage), ir::IterKind::Spatial));
  const auto prd = without_last(names_of(b.stage(stage), ir::IterKind::Reduce));
  auto place_dot_product = [&](SketchBuilder& n) {
    n.add(schedule::AnnotateStep{p, dot.bytes, schedule::Annotation::DotProduct});
    n.add(schedule::AnnotateStep{p, dot.lanes, schedule::Annotation::Vectorize});
    n.mark_structured(p);
  };
  std::vector<std::pair<SketchBuilder, int>> out;
  const int consumer = elementwise_matched_consumer(b.state(), stage);
  if (consumer < 0 || !untouched(b.stage(consumer)) || psp.empty()) {
    SketchBuilder n = b;
    for (const auto& x : psp) n.tile(p, x, 3);
    for (const auto& r : prd) n.tile(p, r, 1);
    const auto order = concat({parts(psp, 0), parts(psp, 1), parts(prd, 0), parts(psp, 2), parts(prd, 1),
                               parts(psp, 3), {dot.bytes, dot.lanes}});
    n.add(schedule::ReorderStep{p, order});
    n.sites().parallel.push_back({p, concat({parts(psp, 0), parts(psp, 1)})});
    n.sites().unroll.push_back({p, order.front()});
    place_dot_product(n);
    n.note(p + ": multi-level tiling around the byte dot product");
    out.emplace_back(std::move(n), stage - 1);
    return out;
  }
  // As MultiLevelTilingWithFusion, the consumer's lanes whole too.
  const std::string c = b.stage(consumer).name();
  const auto all_csp = names_of(b.stage(consumer), ir::IterKind::Spatial);
  for (int level : {1, 2}) {
    SketchBuilder n = b;
    fuse_into_consumer(n, b, stage, consumer, psp, prd, without_last(all_csp), {all_csp.back()},
                       {dot.bytes, dot.lanes}, level);
    n.add(schedule::AnnotateStep{c, all_csp.back(), schedule::Annotation::Vectorize});
    place_dot_product(n);
    n.mark_structured(c);
    n.note(p + ": multi-level tiling around the byte dot product, computed in " + c + "'s level-" +
           std::to_string(level) + " tiles");
    out.emplace_back(std::move(n), stage - 1);
  }
  return out;
}

namespace {

// The strided input a cache read pays for, if any.
std::optional<StridedInput> cache_read_candidate(const schedule::State& state, int stage) {
  const schedule::Stage& s = state.stages()[stage];
  // A cache write's local stage is one this rule has seen already, as the stage it came from.
  if (!untouched(s) || !needs_multi_level_tiling(state, stage) || schedule::is_cache_write_local(*s.tensor))
    return std::nullopt;
  for (const auto& in : strided_inputs(state, stage))
    if (in.reuse >= kMinCacheReadReuse) return in;
  return std::nullopt;
}

}  // namespace

SketchRule::Condition AddCacheRead::condition(const SketchContext&, const SketchBuilder& b, int stage) const {
  return cache_read_candidate(b.state(), stage) ? Condition::Apply : Condition::Pass;
}

std::vector<std::pair<SketchBuilder, int>> AddCacheRead::apply(const SketchContext&, const SketchBuilder& b,
                                                               int stage) const {
  const StridedInput in = *cache_read_candidate(b.state(), stage);
  std::vector<int> layout;
  for (size_t d = 0; d < in.tensor->shape.size(); ++d)
    if (d != in.dim) layout.push_back(static_cast<int>(d));
  layout.push_back(static_cast<int>(in.dim));
  SketchBuilder n = b;
  const std::string name = b.stage(stage).name();
  n.add(schedule::CacheReadStep{name, in.tensor->name, layout, ""});
  n.note(name + ": reads " + schedule::cache_read_name(in.tensor->name) + ", a copy of " + in.tensor->name +
         " with dimension " + std::to_string(in.dim) + " last");
  return {{std::move(n), stage + 1}};  // the stage moved up by one; its tiling rules come next
}

SketchRule::Condition AddCacheWrite::condition(const SketchContext&, const SketchBuilder& b, int stage) const {
  const auto& state = b.state();
  return needs_multi_level_tiling(state, stage) && elementwise_matched_consumer(state, stage) < 0 ? Condition::Apply
                                                                                                  : Condition::Pass;
}

std::vector<std::pair<SketchBuilder, int>> AddCacheWrite::apply(const SketchContext&, const SketchBuilder& b,
                                                                int stage) const {
  SketchBuilder n = b;
  const std::string name = b.stage(stage).name();
  n.add(schedule::CacheWriteStep{name, ""});
  n.note(name + ": cache write into " + schedule::cache_write_name(name));
  return {{std::move(n), stage}};  // the local stage now sits at `stage`; tile it next
}

SketchRule::Condition MultiLevelTilingWithFusion::condition(const SketchContext&, const SketchBuilder& b,
                                                            int stage) const {
  const auto& state = b.state();
  if (!needs_multi_level_tiling(state, stage)) return Condition::Pass;
  const int consumer = elementwise_matched_consumer(state, stage);
  if (consumer < 0) return Condition::Pass;
  const auto& c = state.stages()[consumer];
  return untouched(c) ? Condition::ApplyAndSkipRest : Condition::Pass;
}

std::vector<std::pair<SketchBuilder, int>> MultiLevelTilingWithFusion::apply(const SketchContext&,
                                                                             const SketchBuilder& b,
                                                                             int stage) const {
  const int consumer = elementwise_matched_consumer(b.state(), stage);
  const std::string p = b.stage(stage).name(), c = b.stage(consumer).name();
  const auto psp = names_of(b.stage(stage), ir::IterKind::Spatial);
  const auto prd = names_of(b.stage(stage), ir::IterKind::Reduce);
  const auto csp = names_of(b.stage(consumer), ir::IterKind::Spatial);
  std::vector<std::pair<SketchBuilder, int>> out;
  for (int level : {1, 2}) {
    SketchBuilder n = b;
    fuse_into_consumer(n, b, stage, consumer, psp, prd, csp, {}, {}, level);
    Sketch& sites = n.sites();
    sites.vectorize.push_back({c, split_part(csp.back(), level)});
    sites.vectorize.push_back({p, split_part(psp.back(), level == 1 ? 2 : 1)});
    n.mark_structured(p);
    n.mark_structured(c);
    n.note(p + ": multi-level tiling, computed in " + c + "'s level-" + std::to_string(level) + " tiles");
    out.emplace_back(std::move(n), stage - 1);
  }
  return out;
}

SketchRule::Condition MultiLevelTiling::condition(const SketchContext&, const SketchBuilder& b, int stage) const {
  return needs_multi_level_tiling(b.state(), stage) ? Condition::ApplyAndSkipRest : Condition::Pass;
}

std::vector<std::pair<SketchBuilder, int>> MultiLevelTiling::apply(const SketchContext&, const SketchBuilder& b,
                                                                   int stage) const {
  SketchBuilder n = b;
  const std::string s = b.stage(stage).name();
  const auto sp = names_of(b.stage(stage), ir::IterKind::Spatial);
  const auto rd = names_of(b.stage(stage), ir::IterKind::Reduce);
  for (const auto& x : sp) n.tile(s, x, 3);
  for (const auto& r : rd) n.tile(s, r, 1);
  const auto order = concat({parts(sp, 0), parts(sp, 1), parts(rd, 0), parts(sp, 2), parts(rd, 1), parts(sp, 3)});
  n.add(schedule::ReorderStep{s, order});
  Sketch& sites = n.sites();
  sites.parallel.push_back({s, concat({parts(sp, 0), parts(sp, 1)})});
  sites.vectorize.push_back({s, split_part(sp.back(), 3)});
  sites.unroll.push_back({s, order.front()});
  n.mark_structured(s);
  n.note(s + ": multi-level tiling");
  return {{std::move(n), stage - 1}};
}

SketchRules cpu_sketch_rules() {
  SketchRules rules;
  rules.push_back(std::make_unique<AlwaysInline>());
  rules.push_back(std::make_unique<AddRfactor>());
  rules.push_back(std::make_unique<MultiLevelTilingWithByteDotProduct>());
  rules.push_back(std::make_unique<AddCacheRead>());
  rules.push_back(std::make_unique<AddCacheWrite>());
  rules.push_back(std::make_unique<MultiLevelTilingWithFusion>());
  rules.push_back(std::make_unique<MultiLevelTiling>());
  rules.push_back(std::make_unique<SkipStage>());
  return rules;
}

}  // namespace tessera::autoschedule
