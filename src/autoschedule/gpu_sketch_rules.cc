#include "autoschedule/gpu_sketch_rules.h"

#include <set>

#include "autoschedule/stage_analysis.h"
#include "schedule/gpu_schedule.h"
#include "schedule/iter_names.h"

namespace tessera::autoschedule {

using schedule::Annotation;
using schedule::split_part;

SketchRule::Condition CrossThreadReduction::condition(const SketchContext&, const SketchBuilder& b, int stage) const {
  const auto& state = b.state();
  const schedule::Stage& s = b.stage(stage);
  if (!s.tensor->is_reduction() || !untouched(s) || needs_multi_level_tiling(state, stage)) return Condition::Pass;
  return spatial_length(state, stage) <= schedule::kCrossThreadMaxOutputs &&
                 reduce_length(state, stage) >= schedule::kCrossThreadMinReduce
             ? Condition::Apply
             : Condition::Pass;
}

std::vector<std::pair<SketchBuilder, int>> CrossThreadReduction::apply(const SketchContext&, const SketchBuilder& b,
                                                                       int stage) const {
  SketchBuilder n = b;
  const std::string s = b.stage(stage).name();
  const auto sp = names_of(b.stage(stage), ir::IterKind::Spatial), rd = names_of(b.stage(stage), ir::IterKind::Reduce);
  const std::string r = n.fuse(s, rd);
  // Lengths (threads, per step): the reduction runs r.0, then r.2 within
  // each thread's step, r.1 across the threads.
  const int slot = n.tile(s, r, 2);
  n.add(schedule::ReorderStep{s, concat({sp, {split_part(r, 1), split_part(r, 0), split_part(r, 2)}})});
  if (!sp.empty()) {
    const std::string outputs = n.fuse(s, sp);
    n.add(schedule::AnnotateStep{s, outputs, Annotation::BlockX});
  }
  n.add(schedule::AnnotateStep{s, split_part(r, 1), Annotation::ThreadX});
  n.add_block(BlockThreads{{{slot, 0}}});
  n.sites().unroll.push_back({s, split_part(r, 0)});
  n.mark_structured(s);
  n.note(s + ": cross-thread reduction over " + r);
  return {{std::move(n), stage - 1}};
}

SketchRule::Condition GpuMultiLevelTiling::condition(const SketchContext&, const SketchBuilder& b, int stage) const {
  const auto& state = b.state();
  if (!needs_multi_level_tiling(state, stage) || !untouched(b.stage(stage))) return Condition::Pass;
  const int consumer = elementwise_matched_consumer(state, stage);
  return consumer >= 0 && untouched(state.stages()[consumer]) ? Condition::ApplyAndSkipRest : Condition::Pass;
}

std::vector<std::pair<SketchBuilder, int>> GpuMultiLevelTiling::apply(const SketchContext&, const SketchBuilder& b,
                                                                      int stage) const {
  const int consumer = elementwise_matched_consumer(b.state(), stage);
  const schedule::Stage& ps = b.stage(stage);
  const std::string p = ps.name(), c = b.stage(consumer).name();
  const auto psp = names_of(ps, ir::IterKind::Spatial), prd = names_of(ps, ir::IterKind::Reduce);
  const auto csp = names_of(b.stage(consumer), ir::IterKind::Spatial);
  SketchBuilder n = b;

  // Lengths (t, i1, i2) per spatial axis: the consumer splits it into
  // (block, t, i1 * i2), the stage what one thread computes into (i1, i2).
  BlockThreads threads;
  for (size_t i = 0; i < psp.size(); ++i) {
    const int slot = n.add_slot(TileSlot{p, psp[i], ps.iters[ps.iter_index(psp[i])].extent, 3, false});
    n.follow(c, csp[i], slot, {1, 2});
    n.follow(p, psp[i], slot, {1, 1}, 1);
    threads.lengths.push_back({slot, 0});
  }
  const int block = n.add_block(std::move(threads));
  for (const auto& r : prd) n.tile(p, r, 2);
  n.add(schedule::ReorderStep{c, concat({parts(csp, 0), parts(csp, 1), parts(csp, 2)})});
  const std::string block_loop = n.fuse(c, parts(csp, 0));
  const std::string thread_loop = n.fuse(c, parts(csp, 1));
  n.add(schedule::AnnotateStep{c, block_loop, Annotation::BlockX});
  n.add(schedule::AnnotateStep{c, thread_loop, Annotation::ThreadX});

  const auto order = concat({parts(psp, 0), parts(prd, 0), parts(prd, 1), parts(psp, 1), parts(prd, 2), parts(psp, 2)});
  n.add(schedule::ReorderStep{p, order});
  n.add(schedule::ComputeAtStep{p, c, thread_loop});

  // Cooperative fetching: per step of the outer reduce loops, the block's
  // slice of each input in shared memory, every thread copying its share.
  const std::string step_loop = parts(prd, 0).back();
  std::set<std::string> fetched;
  for (const auto& input : ps.tensor->inputs()) {
    if (!fetched.insert(input->name).second) continue;
    std::vector<int> layout;
    std::vector<std::string> axes;
    for (size_t d = 0; d < input->shape.size(); ++d) {
      layout.push_back(static_cast<int>(d));
      axes.push_back(schedule::cache_read_axis(d));
    }
    n.add(schedule::CacheReadStep{p, input->name, layout, "shared"});
    const std::string copy = schedule::cache_read_name(input->name);
    n.add(schedule::ComputeAtStep{copy, p, step_loop});
    const std::string all = n.fuse(copy, axes);
    const int lanes = static_cast<int>(n.sites().vectorize.size());
    n.sites().vectorize.push_back({copy, split_part(all, 2), true});
    n.fetch_split(copy, all, block, lanes);
    n.add(schedule::AnnotateStep{copy, split_part(all, 1), Annotation::ThreadX});
    n.mark_structured(copy);
  }
  n.sites().unroll.push_back({p, order.front()});
  n.mark_structured(p);
  n.mark_structured(c);
  n.note(p + ": GPU multi-level tiling in " + c + "'s threads, inputs fetched into shared memory");
  // The copies went in before the stage: the stages before it keep their places.
  return {{std::move(n), stage - 1}};
}

SketchRules gpu_sketch_rules() {
  SketchRules rules;
  rules.push_back(std::make_unique<AlwaysInline>());
  rules.push_back(std::make_unique<CrossThreadReduction>());
  rules.push_back(std::make_unique<AddCacheWrite>());
  rules.push_back(std::make_unique<GpuMultiLevelTiling>());
  rules.push_back(std::make_unique<SkipStage>());
  return rules;
}

}  // namespace tessera::autoschedule
