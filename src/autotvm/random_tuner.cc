#include "autotvm/random_tuner.h"

namespace tessera::autotvm {

// Rejection sampling while at least half the space is unvisited (at most two
// draws per config on average, whatever the size of the space); past that the
// unvisited indices are listed, which then costs at most twice the visited set.
int64_t RandomTuner::draw_unvisited() {
  const int64_t size = task_.space.size();
  if (!enumerated_ && 2 * num_visited() < size) {
    std::uniform_int_distribution<int64_t> any(0, size - 1);
    for (;;) {
      const int64_t index = any(rng_);
      if (!visited(index)) return index;
    }
  }
  if (!enumerated_) {
    for (int64_t i = 0; i < size; ++i)
      if (!visited(i)) remaining_.push_back(i);
    enumerated_ = true;
  }
  while (!remaining_.empty()) {
    std::uniform_int_distribution<size_t> pick(0, remaining_.size() - 1);
    const size_t k = pick(rng_);
    const int64_t index = remaining_[k];
    remaining_[k] = remaining_.back();
    remaining_.pop_back();
    if (!visited(index)) return index;  // mark_measured may have taken it since
  }
  return -1;
}

std::vector<ConfigEntity> RandomTuner::next_batch(int batch_size) {
  std::vector<ConfigEntity> batch;
  while (static_cast<int>(batch.size()) < batch_size && has_next()) {
    const int64_t index = draw_unvisited();
    if (index < 0) break;
    visit(index);
    batch.push_back(task_.space.get(index));
  }
  return batch;
}

}  // namespace tessera::autotvm
