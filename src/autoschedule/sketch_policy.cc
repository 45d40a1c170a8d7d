#include "autoschedule/sketch_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "autoschedule/generate_sketches.h"
#include "autoschedule/mutation.h"
#include "autoschedule/random_annotation.h"
#include "features/store_features.h"
#include "tessera/error.h"
#include "tir/lower.h"
#include "tir/verify_gpu.h"

namespace tessera::autoschedule {

namespace {

constexpr size_t kBestMeasuredKept = 64;
constexpr size_t kFeaturesKept = 4096;  // about a few generations of candidates
constexpr float kUnlowerable = -std::numeric_limits<float>::max();

const MutationKind kMutations[] = {MutationKind::TileSize, MutationKind::TileSize, MutationKind::AutoUnroll,
                                   MutationKind::Parallel, MutationKind::ComputeLocation, MutationKind::Pipeline};

}  // namespace

SketchPolicy::SketchPolicy(const ir::ComputeDAG& dag, const SketchContext& ctx, CostModel& model,
                           EvolutionOptions options, uint64_t seed)
    : dag_(dag), ctx_(ctx), model_(model), options_(options), rng_(seed), sketches_(generate_sketches(dag, ctx)) {
  if (sketches_.empty()) throw Error("auto-scheduler: the sketch rules derive no sketch from this DAG");
}

Candidate SketchPolicy::make(int sketch, SketchParams params) const {
  Candidate c;
  c.sketch = sketch;
  c.trace = instantiate(sketches_[sketch], params);
  c.params = std::move(params);
  return c;
}

Candidate SketchPolicy::random_candidate() {
  const int s = static_cast<int>(std::uniform_int_distribution<size_t>(0, sketches_.size() - 1)(rng_));
  return make(s, random_params(sketches_[s], ctx_, rng_));
}

const StoreRows& SketchPolicy::features_of(const schedule::Trace& trace) {
  std::string key = trace.dump();
  if (auto it = features_.find(key); it != features_.end()) return it->second;
  if (features_.size() >= kFeaturesKept) features_.clear();
  StoreRows rows;
  try {
    const tir::LoweredFunc f = tir::lower(dag_, trace);
    // A GPU block the device cannot run (too many threads or shared bytes)
    // is as unlowerable: the verifier says so before any build would.
    if (ctx_.target.is_gpu()) tir::verify_gpu(tir::split_device_kernels(f), ctx_.target.gpu);
    rows = features::store_features(f);
  } catch (const Error&) {
    // An unlowerable schedule: no rows, and the search never picks it.
  }
  return features_.emplace(std::move(key), std::move(rows)).first->second;
}

std::vector<float> SketchPolicy::scores(const std::vector<Candidate>& population) {
  std::vector<StoreRows> rows;
  for (const auto& c : population) rows.push_back(features_of(c.trace));
  std::vector<float> s = model_.predict(rows);
  for (size_t i = 0; i < s.size(); ++i)
    if (rows[i].empty()) s[i] = kUnlowerable;
  return s;
}

std::vector<Candidate> SketchPolicy::evolve(std::vector<Candidate> population) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int g = 0; g < options_.generations && !population.empty(); ++g) {
    const std::vector<float> s = scores(population);
    // Roulette weights: scores shifted to be positive; unlowerable ones never.
    float lo = std::numeric_limits<float>::max();
    for (float x : s)
      if (x != kUnlowerable) lo = std::min(lo, x);
    std::vector<double> w;
    for (float x : s) w.push_back(x == kUnlowerable ? 0.0 : static_cast<double>(x - lo) + 1e-3);
    if (std::all_of(w.begin(), w.end(), [](double x) { return x == 0; })) break;
    std::discrete_distribution<size_t> roulette(w.begin(), w.end());

    std::vector<Candidate> next;
    std::unordered_set<std::string> seen;
    // The best quarter survives as it is.
    std::vector<size_t> order(population.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] > s[b]; });
    for (size_t i = 0; i < order.size() / 4; ++i)
      if (s[order[i]] != kUnlowerable && seen.insert(population[order[i]].trace.dump()).second)
        next.push_back(population[order[i]]);
    for (int attempt = 0; static_cast<int>(next.size()) < options_.population && attempt < 8 * options_.population;
         ++attempt) {
      const Candidate& parent = population[roulette(rng_)];
      const Sketch& sketch = sketches_[parent.sketch];
      SketchParams child = parent.params;
      if (u(rng_) < options_.mutation_probability) {
        const MutationKind kind = kMutations[std::uniform_int_distribution<size_t>(0, std::size(kMutations) - 1)(rng_)];
        if (!mutate(kind, sketch, child, rng_)) continue;
      } else {
        const Candidate& other = population[roulette(rng_)];
        if (other.sketch != parent.sketch) continue;
        child = crossover(sketch, parent.params, other.params, rng_);
      }
      Candidate c = make(parent.sketch, std::move(child));
      if (seen.insert(c.trace.dump()).second) next.push_back(std::move(c));
    }
    population = std::move(next);
  }
  return population;
}

std::vector<Candidate> SketchPolicy::next_batch(int n) {
  std::vector<Candidate> population;
  for (size_t i = 0; i < best_measured_.size() && static_cast<int>(i) < options_.measured_seeds; ++i)
    population.push_back(best_measured_[i].second);
  while (static_cast<int>(population.size()) < options_.population) population.push_back(random_candidate());
  population = evolve(std::move(population));

  const std::vector<float> s = scores(population);
  std::vector<size_t> order(population.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] > s[b]; });
  const int by_model = n - static_cast<int>(std::floor(n * options_.eps_greedy));
  std::vector<Candidate> batch;
  for (size_t i : order) {
    if (static_cast<int>(batch.size()) >= by_model || s[i] == kUnlowerable) break;
    if (measured_.insert(population[i].trace.dump()).second) batch.push_back(population[i]);
  }
  for (int attempt = 0; static_cast<int>(batch.size()) < n && attempt < 16 * n; ++attempt) {
    Candidate c = random_candidate();
    // On a GPU a random block may hold more than the device runs: not worth a build.
    if (ctx_.target.is_gpu() && features_of(c.trace).empty()) continue;
    if (measured_.insert(c.trace.dump()).second) batch.push_back(std::move(c));
  }
  return batch;
}

void SketchPolicy::record(const std::vector<Candidate>& candidates, const std::vector<measure::MeasureResult>& results) {
  std::vector<MeasuredCandidate> measured;
  const std::string key = dag_.workload_key();
  for (size_t i = 0; i < candidates.size() && i < results.size(); ++i) {
    measured_.insert(candidates[i].trace.dump());
    const double cost = results[i].valid() ? results[i].rank_cost() : std::numeric_limits<double>::infinity();
    measured.push_back({key, features_of(candidates[i].trace), cost});
    if (results[i].valid() && candidates[i].sketch >= 0) {
      best_measured_.emplace_back(cost, candidates[i]);
    }
  }
  std::stable_sort(best_measured_.begin(), best_measured_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  if (best_measured_.size() > kBestMeasuredKept) best_measured_.resize(kBestMeasuredKept);
  model_.update(measured);
}

}  // namespace tessera::autoschedule
