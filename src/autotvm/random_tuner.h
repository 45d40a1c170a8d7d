#pragma once
// The baseline search: configs drawn uniformly at random, never one twice.
#include <cstdint>
#include <random>
#include <vector>

#include "autotvm/tuner.h"

namespace tessera::autotvm {

class RandomTuner : public Tuner {
 public:
  explicit RandomTuner(const Task& task, uint64_t seed = 0) : Tuner(task), rng_(seed) {}
  std::vector<ConfigEntity> next_batch(int batch_size) override;

 private:
  int64_t draw_unvisited();

  std::mt19937_64 rng_;
  // Unvisited indices, listed once the space is mostly visited (rejection
  // sampling would then waste draws); entries visited since are skipped.
  std::vector<int64_t> remaining_;
  bool enumerated_ = false;
};

}  // namespace tessera::autotvm
