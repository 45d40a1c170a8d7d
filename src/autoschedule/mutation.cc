#include "autoschedule/mutation.h"

#include <algorithm>
#include <set>

#include "autoschedule/random_annotation.h"

namespace tessera::autoschedule {

namespace {

size_t pick(size_t n, std::mt19937_64& rng) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }

std::vector<int64_t> divisors_above_one(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 2; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// Indices of sites whose choice has more than one value.
template <class Sites, class Count>
std::vector<size_t> changeable(const Sites& sites, Count count) {
  std::vector<size_t> out;
  for (size_t i = 0; i < sites.size(); ++i)
    if (count(sites[i]) > 1) out.push_back(i);
  return out;
}

// A value in [0, n) other than `current`.
int other_choice(int current, int n, std::mt19937_64& rng) {
  int v = static_cast<int>(pick(static_cast<size_t>(n - 1), rng));
  return v >= current ? v + 1 : v;
}

}  // namespace

bool mutate_tile_size(const Sketch& sketch, SketchParams& params, std::mt19937_64& rng) {
  std::vector<size_t> slots;
  for (size_t i = 0; i < sketch.tiles.size(); ++i)
    if (sketch.tiles[i].extent > 1) slots.push_back(i);
  if (slots.empty()) return false;
  for (int attempt = 0; attempt < 16; ++attempt) {
    const size_t s = slots[pick(slots.size(), rng)];
    // Levels: the outer loop, then the chosen lengths.
    std::vector<int64_t> levels = {sketch.tiles[s].extent};
    for (int64_t l : params.tiles[s]) {
      levels.front() /= l;
      levels.push_back(l);
    }
    std::vector<size_t> sources;
    for (size_t i = 0; i < levels.size(); ++i)
      if (levels[i] > 1) sources.push_back(i);
    if (sources.empty()) continue;
    const size_t from = sources[pick(sources.size(), rng)];
    const size_t to = static_cast<size_t>(other_choice(static_cast<int>(from), static_cast<int>(levels.size()), rng));
    const auto ds = divisors_above_one(levels[from]);
    const int64_t d = ds[pick(ds.size(), rng)];
    levels[from] /= d;
    levels[to] *= d;
    if (levels.back() > kMaxInnermostFactor) continue;
    params.tiles[s].assign(levels.begin() + 1, levels.end());
    choose_vectorize(sketch, params);
    return true;
  }
  return false;
}

bool mutate_auto_unroll(const Sketch& sketch, SketchParams& params, std::mt19937_64& rng) {
  if (sketch.unroll.empty()) return false;
  const auto& choices = auto_unroll_choices();
  const size_t i = pick(sketch.unroll.size(), rng);
  const int current = static_cast<int>(std::find(choices.begin(), choices.end(), params.unroll[i]) - choices.begin());
  params.unroll[i] = choices[other_choice(current, static_cast<int>(choices.size()), rng)];
  return true;
}

bool mutate_parallel(const Sketch& sketch, SketchParams& params, std::mt19937_64& rng) {
  const auto sites = changeable(sketch.parallel, [](const ParallelSite& p) { return p.iters.size(); });
  if (sites.empty()) return false;
  const size_t i = sites[pick(sites.size(), rng)];
  // 1 .. n loops fused: a search never drops parallelism it started with.
  const int n = static_cast<int>(sketch.parallel[i].iters.size());
  const int current = std::max(params.parallel[i], 1) - 1;
  params.parallel[i] = other_choice(current, n, rng) + 1;
  return true;
}

bool mutate_compute_location(const Sketch& sketch, SketchParams& params, std::mt19937_64& rng) {
  if (sketch.locations.empty()) return false;
  const size_t i = pick(sketch.locations.size(), rng);
  const int n = static_cast<int>(sketch.locations[i].target_iters.size()) + 1;
  params.locations[i] = other_choice(params.locations[i], n, rng);
  return true;
}

bool mutate_pipeline(const Sketch& sketch, SketchParams& params, std::mt19937_64& rng) {
  if (sketch.pipeline.empty()) return false;
  const size_t i = pick(sketch.pipeline.size(), rng);
  params.pipeline[i] = 1 - params.pipeline[i];
  return true;
}

bool mutate(MutationKind kind, const Sketch& sketch, SketchParams& params, std::mt19937_64& rng) {
  switch (kind) {
    case MutationKind::TileSize: return mutate_tile_size(sketch, params, rng);
    case MutationKind::AutoUnroll: return mutate_auto_unroll(sketch, params, rng);
    case MutationKind::Parallel: return mutate_parallel(sketch, params, rng);
    case MutationKind::ComputeLocation: return mutate_compute_location(sketch, params, rng);
    case MutationKind::Pipeline: return mutate_pipeline(sketch, params, rng);
  }
  return false;
}

SketchParams crossover(const Sketch& sketch, const SketchParams& a, const SketchParams& b, std::mt19937_64& rng) {
  std::set<std::string> stages, from_b;
  for (const auto& t : sketch.tiles) stages.insert(t.stage);
  for (const auto& p : sketch.parallel) stages.insert(p.stage);
  for (const auto& v : sketch.vectorize) stages.insert(v.stage);
  for (const auto& u : sketch.unroll) stages.insert(u.stage);
  for (const auto& l : sketch.locations) stages.insert(l.stage);
  for (const auto& p : sketch.pipeline) stages.insert(p.stage);
  for (const auto& s : stages)
    if (pick(2, rng)) from_b.insert(s);
  auto take = [&](const std::string& stage) { return from_b.count(stage) ? &b : &a; };
  SketchParams child = a;
  for (size_t i = 0; i < sketch.tiles.size(); ++i) child.tiles[i] = take(sketch.tiles[i].stage)->tiles[i];
  for (size_t i = 0; i < sketch.parallel.size(); ++i) child.parallel[i] = take(sketch.parallel[i].stage)->parallel[i];
  for (size_t i = 0; i < sketch.unroll.size(); ++i) child.unroll[i] = take(sketch.unroll[i].stage)->unroll[i];
  for (size_t i = 0; i < sketch.locations.size(); ++i)
    child.locations[i] = take(sketch.locations[i].stage)->locations[i];
  for (size_t i = 0; i < sketch.pipeline.size(); ++i) child.pipeline[i] = take(sketch.pipeline[i].stage)->pipeline[i];
  for (size_t i = 0; i < sketch.vectorize.size(); ++i)
    if (sketch.vectorize[i].fetch) child.vectorize[i] = take(sketch.vectorize[i].stage)->vectorize[i];
  choose_vectorize(sketch, child);
  return child;
}

}  // namespace tessera::autoschedule
