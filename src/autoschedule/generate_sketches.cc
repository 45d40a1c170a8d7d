#include "autoschedule/generate_sketches.h"

#include "autoschedule/cpu_sketch_rules.h"
#include "autoschedule/gpu_sketch_rules.h"
#include "autoschedule/stage_analysis.h"
#include "schedule/iter_names.h"

namespace tessera::autoschedule {

namespace {

using schedule::Location;

// The plain sites of a stage no rule structured (see the header).
void add_plain_sites(SketchBuilder& b, int stage) {
  const schedule::Stage& s = b.stage(stage);
  if (s.location != Location::Root) return;
  const std::string name = s.name();
  int last_spatial = -1;
  for (size_t i = 0; i < s.iters.size(); ++i)
    if (s.iters[i].kind == ir::IterKind::Spatial) last_spatial = static_cast<int>(i);
  // Vectors: only when the innermost loop is spatial (a reduction's inner
  // loop is its reduce axis).
  std::string vector_iter;
  if (last_spatial >= 0 && last_spatial + 1 == static_cast<int>(s.iters.size()) && s.iters[last_spatial].extent > 1) {
    const std::string iter = s.iters[last_spatial].name;
    b.tile(name, iter, 1);
    vector_iter = schedule::split_part(iter, 1);
    b.sites().vectorize.push_back({name, vector_iter});
  }
  std::vector<std::string> outer;
  for (const auto& it : b.stage(stage).iters) {
    if (it.kind != ir::IterKind::Spatial || it.name == vector_iter) break;
    outer.push_back(it.name);
  }
  if (!outer.empty()) b.sites().parallel.push_back({name, outer});
  if (s.tensor->is_reduction()) b.sites().unroll.push_back({name, b.stage(stage).iters.front().name});
}

// Root or inside one of the consumer's outer spatial loops (not its innermost
// loop, which is the vector loop or the reduction), or, when the consumer is
// computed inside another stage's loops, inside one of those.
void add_location_site(SketchBuilder& b, int stage) {
  const auto& state = b.state();
  const schedule::Stage& s = state.stages()[stage];
  if (s.location != Location::Root || is_output(state, stage)) return;
  const auto cs = consumers(state, stage);
  if (cs.size() != 1) return;
  const schedule::Stage& c = state.stages()[cs[0]];
  std::vector<std::string> iters;
  if (c.location == Location::At) {
    // The consumer is computed in another stage's tiles: those loops, down
    // to the consumer's own.
    const schedule::Stage& outer = state.stage(c.attach_stage);
    for (const auto& it : outer.iters) {
      iters.push_back(it.name);
      if (it.name == c.attach_iter) break;
    }
    b.sites().locations.push_back({s.name(), outer.name(), iters});
    return;
  }
  for (size_t i = 0; i + 1 < c.iters.size(); ++i) {
    if (c.iters[i].kind != ir::IterKind::Spatial) break;
    iters.push_back(c.iters[i].name);
  }
  if (!iters.empty()) b.sites().locations.push_back({s.name(), c.name(), iters});
}

Sketch finish(SketchBuilder b, const SketchContext& ctx) {
  const int n = static_cast<int>(b.state().stages().size());
  if (ctx.target.is_gpu()) {
    for (int i = 0; i < n; ++i)
      if (!b.structured(b.stage(i).name())) add_plain_gpu_stage(b, i, ctx.target.gpu.max_threads_per_block);
    return b.sketch();
  }
  for (int i = 0; i < n; ++i)
    if (!b.structured(b.stage(i).name())) add_plain_sites(b, i);
  for (int i = 0; i < n; ++i)
    if (!b.structured(b.stage(i).name())) add_location_site(b, i);
  return b.sketch();
}

}  // namespace

std::vector<Sketch> generate_sketches(const ir::ComputeDAG& dag, const SketchContext& ctx, const SketchRules& rules) {
  std::vector<Sketch> done;
  SketchBuilder start(dag);
  std::vector<std::pair<SketchBuilder, int>> todo = {{start, static_cast<int>(start.state().stages().size()) - 1}};
  while (!todo.empty() && done.size() < kMaxSketches) {
    auto [b, stage] = std::move(todo.back());
    todo.pop_back();
    if (stage < 0) {
      done.push_back(finish(std::move(b), ctx));
      continue;
    }
    // Derived sketches are pushed in reverse so that the first rule's are finished first.
    std::vector<std::pair<SketchBuilder, int>> derived;
    for (const auto& rule : rules) {
      const auto c = rule->condition(ctx, b, stage);
      if (c == SketchRule::Condition::Pass) continue;
      for (auto& d : rule->apply(ctx, b, stage)) derived.push_back(std::move(d));
      if (c == SketchRule::Condition::ApplyAndSkipRest) break;
    }
    for (auto it = derived.rbegin(); it != derived.rend(); ++it) todo.push_back(std::move(*it));
  }
  return done;
}

std::vector<Sketch> generate_sketches(const ir::ComputeDAG& dag, const SketchContext& ctx) {
  return generate_sketches(dag, ctx, ctx.target.is_gpu() ? gpu_sketch_rules() : cpu_sketch_rules());
}

}  // namespace tessera::autoschedule
