#include "autotvm/gridsearch_tuner.h"

namespace tessera::autotvm {

std::vector<ConfigEntity> GridSearchTuner::next_batch(int batch_size) {
  std::vector<ConfigEntity> batch;
  const int64_t size = task_.space.size();
  while (static_cast<int>(batch.size()) < batch_size && next_index_ < size) {
    const int64_t index = next_index_++;
    if (visited(index)) continue;
    visit(index);
    batch.push_back(task_.space.get(index));
  }
  return batch;
}

}  // namespace tessera::autotvm
