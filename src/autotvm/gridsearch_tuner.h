#pragma once
// Exhaustive search in index order (0, 1, 2, ...), skipping configs already
// measured: the right tuner for a small space, a poor one for a large space.
#include <cstdint>
#include <vector>

#include "autotvm/tuner.h"

namespace tessera::autotvm {

class GridSearchTuner : public Tuner {
 public:
  explicit GridSearchTuner(const Task& task) : Tuner(task) {}
  std::vector<ConfigEntity> next_batch(int batch_size) override;

 private:
  int64_t next_index_ = 0;
};

}  // namespace tessera::autotvm
