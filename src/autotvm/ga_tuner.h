#pragma once
// A genetic algorithm over knob choices: each generation is bred from the
// measured members of the last one and the best configs seen so far (elites),
// by crossover knob by knob and random mutation. It never proposes a config
// already measured: a child that was seen is mutated again until it is new.
#include <cstdint>
#include <random>
#include <unordered_set>
#include <vector>

#include "autotvm/tuner.h"

namespace tessera::autotvm {

struct GAOptions {
  int pop_size = 100;          // configs per generation (the first one is random)
  int elite_num = 3;           // best configs kept as parents for every later generation
  double mutation_prob = 0.1;  // chance that a child's knob takes a random candidate
};

class GATuner : public Tuner {
 public:
  // Throws tessera::Error for options out of range.
  GATuner(const Task& task, GAOptions options = {}, uint64_t seed = 0);
  std::vector<ConfigEntity> next_batch(int batch_size) override;
  void update(const std::vector<ConfigEntity>& configs, const std::vector<measure::MeasureResult>& results) override;

 private:
  using Genes = std::vector<int>;  // candidate position per knob
  struct Scored {
    Genes genes;
    double score;  // FLOP/s; 0 for a failed measurement
  };

  void breed();
  // A random config neither measured nor in `taken`; -1 when there is none.
  int64_t random_fresh(const std::unordered_set<int64_t>& taken);

  GAOptions options_;
  std::mt19937_64 rng_;
  std::vector<int> dims_;          // candidates per knob
  std::vector<Genes> generation_;  // to propose, in order
  size_t next_ = 0;                // first member of generation_ not proposed yet
  std::vector<Scored> measured_;   // measured since the last breeding
  std::vector<Scored> elites_;
};

}  // namespace tessera::autotvm
