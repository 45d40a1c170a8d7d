#include "autotvm/ga_tuner.h"

#include <algorithm>

#include "tessera/error.h"

namespace tessera::autotvm {

GATuner::GATuner(const Task& task, GAOptions options, uint64_t seed) : Tuner(task), options_(options), rng_(seed) {
  if (options_.pop_size < 1 || options_.elite_num < 0 || options_.mutation_prob < 0 || options_.mutation_prob > 1)
    throw Error("GA tuner: need pop_size >= 1, elite_num >= 0 and 0 <= mutation_prob <= 1, got pop_size=" +
                std::to_string(options_.pop_size) + " elite_num=" + std::to_string(options_.elite_num) +
                " mutation_prob=" + std::to_string(options_.mutation_prob));
  for (const Knob& knob : task.space.knobs()) dims_.push_back(static_cast<int>(knob.candidates.size()));
}

int64_t GATuner::random_fresh(const std::unordered_set<int64_t>& taken) {
  const int64_t size = task_.space.size();
  const int64_t used = num_visited() + static_cast<int64_t>(taken.size());
  if (used >= size) return -1;
  std::uniform_int_distribution<int64_t> any(0, size - 1);
  auto fresh = [&](int64_t i) { return !visited(i) && !taken.count(i); };
  if (2 * used < size) {  // mostly free: a few draws suffice
    for (;;)
      if (const int64_t i = any(rng_); fresh(i)) return i;
  }
  // Mostly used: scan from a random start (rare, and bounded by the space).
  const int64_t start = any(rng_);
  for (int64_t step = 0; step < size; ++step)
    if (const int64_t i = (start + step) % size; fresh(i)) return i;
  return -1;
}

void GATuner::breed() {
  std::vector<Scored> pool = measured_;
  pool.insert(pool.end(), elites_.begin(), elites_.end());
  measured_.clear();
  generation_.clear();
  next_ = 0;

  std::unordered_set<int64_t> taken;  // members of the new generation
  auto add = [&](int64_t index) {
    taken.insert(index);
    generation_.push_back(task_.space.choices_of(index));
  };

  if (pool.empty()) {  // first generation: random
    for (int k = 0; k < options_.pop_size; ++k)
      if (const int64_t i = random_fresh(taken); i >= 0) add(i);
    return;
  }

  std::sort(pool.begin(), pool.end(), [](const Scored& a, const Scored& b) { return a.score > b.score; });
  elites_.assign(pool.begin(), pool.begin() + std::min<size_t>(pool.size(), options_.elite_num));

  // Parents are drawn in proportion to their FLOP/s, so a generation keeps
  // the diversity of its pool (a greedier choice collapses a small space onto
  // configs already measured); when nothing measured was valid, uniformly.
  std::vector<double> weights;
  for (const Scored& s : pool) weights.push_back(s.score);
  if (pool.front().score <= 0) std::fill(weights.begin(), weights.end(), 1.0);
  std::discrete_distribution<size_t> parent(weights.begin(), weights.end());
  std::bernoulli_distribution coin(0.5), mutate(options_.mutation_prob);
  std::uniform_int_distribution<size_t> any_knob(0, dims_.size() - 1);
  auto random_choice = [&](size_t k) { return std::uniform_int_distribution<int>(0, dims_[k] - 1)(rng_); };

  for (int n = 0; n < options_.pop_size; ++n) {
    const Genes& mother = pool[parent(rng_)].genes;
    const Genes& father = pool[parent(rng_)].genes;
    Genes child(dims_.size());
    for (size_t k = 0; k < dims_.size(); ++k) {
      child[k] = coin(rng_) ? mother[k] : father[k];
      if (mutate(rng_)) child[k] = random_choice(k);
    }
    // A child seen before is mutated further; after enough tries (the
    // neighbourhood is used up) a random fresh config takes its place.
    int64_t index = task_.space.index_of(child);
    for (int attempt = 0; !dims_.empty() && attempt < 64 && (visited(index) || taken.count(index)); ++attempt) {
      const size_t k = any_knob(rng_);
      child[k] = random_choice(k);
      index = task_.space.index_of(child);
    }
    if (visited(index) || taken.count(index)) index = random_fresh(taken);
    if (index < 0) break;  // the space is used up
    add(index);
  }
}

std::vector<ConfigEntity> GATuner::next_batch(int batch_size) {
  std::vector<ConfigEntity> batch;
  while (static_cast<int>(batch.size()) < batch_size && has_next()) {
    if (next_ >= generation_.size()) {
      breed();
      if (generation_.empty()) break;
    }
    const int64_t index = task_.space.index_of(generation_[next_++]);
    if (visited(index)) continue;  // marked visited (a resumed run) after breeding
    visit(index);
    batch.push_back(task_.space.get(index));
  }
  return batch;
}

void GATuner::update(const std::vector<ConfigEntity>& configs, const std::vector<measure::MeasureResult>& results) {
  Tuner::update(configs, results);
  for (size_t i = 0; i < configs.size() && i < results.size(); ++i) {
    const measure::MeasureResult& r = results[i];
    measured_.push_back({configs[i].choices(), r.valid() ? task_.flop() / r.rank_cost() : 0.0});
  }
}

}  // namespace tessera::autotvm
