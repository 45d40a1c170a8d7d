#include "autoschedule/random_annotation.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace tessera::autoschedule {

namespace {

void extend(int64_t rest, int count, std::vector<int64_t>& prefix, std::vector<std::vector<int64_t>>& out) {
  if (static_cast<int>(prefix.size()) == count) {
    out.push_back(prefix);
    return;
  }
  const bool last = static_cast<int>(prefix.size()) + 1 == count;
  for (int64_t d = 1; d <= rest; ++d) {
    if (rest % d != 0 || (last && d > kMaxInnermostFactor)) continue;
    prefix.push_back(d);
    extend(rest / d, count, prefix, out);
    prefix.pop_back();
  }
}

int64_t loop_extent(const schedule::State& state, const std::string& stage, const std::string& iter) {
  const auto& s = state.stage(stage);
  return s.iters.at(s.iter_index(iter)).extent;
}

// Whether a vectorize site is the innermost part of the slot's axis.
bool feeds_vector(const Sketch& sketch, const TileSlot& t) {
  for (const auto& v : sketch.vectorize)
    if (v.stage == t.stage && v.iter.rfind(t.iter + ".", 0) == 0) return true;
  return false;
}

// The vector width a loop of n iterations fills best: the largest power of
// two up to `lanes` that divides n (a 10-lane vector of a 16-lane unit runs
// masked), else the largest divisor up to `lanes`.
int64_t vector_width(int64_t n, int64_t lanes) {
  for (int64_t d = lanes; d > 1; d /= 2)
    if (d <= n && n % d == 0) return d;
  for (int64_t d = std::min(n, lanes); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

// The schedule `params` gives without parallel loops or vectors (those do
// not change extents).
schedule::State bare_state(const Sketch& sketch, const SketchParams& params) {
  SketchParams bare = params;
  std::fill(bare.parallel.begin(), bare.parallel.end(), 0);
  std::fill(bare.vectorize.begin(), bare.vectorize.end(), 0);
  return instantiate(sketch, bare).replay(sketch.dag);
}

// choose_vectorize / choose_parallel on the bare state of `params`.
void set_vectorize(const Sketch& sketch, const schedule::State& state, SketchParams& params) {
  for (size_t i = 0; i < sketch.vectorize.size(); ++i) {
    if (sketch.vectorize[i].fetch) continue;  // a choice of its own, kept
    const int64_t e = loop_extent(state, sketch.vectorize[i].stage, sketch.vectorize[i].iter);
    params.vectorize[i] = e >= 2 && e <= kMaxVectorizeExtent ? 1 : 0;
  }
}

void set_parallel(const Sketch& sketch, const SketchContext& ctx, const schedule::State& state, SketchParams& params) {
  const int64_t want = ctx.threads <= 1 ? 0 : ctx.threads * kParallelIterationsPerThread;
  for (size_t i = 0; i < sketch.parallel.size(); ++i) {
    const auto& site = sketch.parallel[i];
    int k = 0;
    int64_t product = 1;
    while (want > 0 && product < want && k < static_cast<int>(site.iters.size()))
      product *= loop_extent(state, site.stage, site.iters[k++]);
    params.parallel[i] = k;
  }
}

// A uniformly drawn factorisation per tile slot (see the header).
void random_tiles(const Sketch& sketch, const SketchContext& ctx, std::mt19937_64& rng, SketchParams& p) {
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  const int64_t lanes = ctx.target.vector_lanes();
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (const auto& t : sketch.tiles) {
    const auto& options = factorizations(t.extent, t.lengths);
    // Half the time a tile whose innermost loop is vectorized gets a full
    // vector there (the largest length up to the target's lanes): uniform
    // factorisations rarely pick it, and without it the search starts far
    // from every good schedule.
    if (feeds_vector(sketch, t) && u(rng) < kFullVectorProbability) {
      const int64_t width = vector_width(t.extent, lanes);
      std::vector<const std::vector<int64_t>*> full;
      for (const auto& o : options)
        if (o.back() == width) full.push_back(&o);
      if (!full.empty()) {
        p.tiles.push_back(*full[pick(full.size())]);
        continue;
      }
    }
    p.tiles.push_back(options[pick(options.size())]);
  }
}

}  // namespace

const std::vector<std::vector<int64_t>>& factorizations(int64_t extent, int count) {
  static std::mutex mutex;
  static std::map<std::pair<int64_t, int>, std::vector<std::vector<int64_t>>> memo;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = memo.try_emplace({extent, count});
  if (inserted) {
    std::vector<int64_t> prefix;
    extend(extent, count, prefix, it->second);
  }
  return it->second;
}

void choose_vectorize(const Sketch& sketch, SketchParams& params) {
  set_vectorize(sketch, bare_state(sketch, params), params);
}

void choose_parallel(const Sketch& sketch, const SketchContext& ctx, SketchParams& params) {
  set_parallel(sketch, ctx, bare_state(sketch, params), params);
}

bool fits_blocks(const Sketch& sketch, const SketchContext& ctx, const SketchParams& params) {
  for (size_t b = 0; b < sketch.blocks.size(); ++b)
    if (block_threads(sketch, params, static_cast<int>(b)) > ctx.target.gpu.max_threads_per_block) return false;
  return true;
}

SketchParams random_params(const Sketch& sketch, const SketchContext& ctx, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  SketchParams p;
  // The tiles again while a GPU block holds more threads than the target
  // allows (a block over many axes multiplies their thread lengths).
  for (int attempt = 0; attempt == 0 || (attempt < kBlockAttempts && !fits_blocks(sketch, ctx, p)); ++attempt) {
    p.tiles.clear();
    random_tiles(sketch, ctx, rng, p);
  }
  p.parallel.assign(sketch.parallel.size(), 0);
  p.vectorize.assign(sketch.vectorize.size(), 0);
  for (size_t i = 0; i < sketch.unroll.size(); ++i)
    p.unroll.push_back(auto_unroll_choices()[pick(auto_unroll_choices().size())]);
  for (const auto& l : sketch.locations) p.locations.push_back(static_cast<int>(pick(l.target_iters.size() + 1)));
  for (size_t i = 0; i < sketch.pipeline.size(); ++i) p.pipeline.push_back(static_cast<int>(pick(2)));
  // Both choices read the same extents: one replay serves them.
  const schedule::State state = bare_state(sketch, p);
  set_vectorize(sketch, state, p);
  set_parallel(sketch, ctx, state, p);
  for (size_t i = 0; i < sketch.vectorize.size(); ++i)
    if (sketch.vectorize[i].fetch) p.vectorize[i] = static_cast<int>(pick(2));
  return p;
}

}  // namespace tessera::autoschedule
