#pragma once
// The static memory plan of an ExecutableGraph: every tensor that is not a
// constant gets a byte offset in one arena, decided once before the first run.
// Intermediate tensors whose lifetimes do not overlap share storage; inputs
// and outputs keep storage of their own (the user reads and writes them
// between runs). A view lives in its root's storage, and keeps it alive.
#include <cstdint>
#include <vector>

#include "runtime/executable_graph.h"

namespace tessera::runtime {

struct MemoryPlan {
  static constexpr int64_t kAlignment = 64;  // bytes: one cache line, a full zmm
  // `bytes` rounded up to a whole number of kAlignment.
  static constexpr int64_t aligned(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

  std::vector<int64_t> offset;  // per tensor, bytes into the arena; -1 for constants
  std::vector<int> storage;     // per tensor, the storage it lives in; -1 for constants
  std::vector<int64_t> storage_bytes;
  int64_t arena_bytes = 0;           // all storages, aligned
  int64_t activation_bytes = 0;      // storages of intermediate tensors only: the peak the plan reaches
  int64_t unplanned_activation_bytes = 0;  // the sum of all intermediate tensors, each in its own buffer
};

// Greedy in call order: a tensor takes the smallest free storage that holds
// it, else grows the largest free one, else opens a new one; a storage is
// freed after the last call that reads its tensor. `keep_every_tensor`:
// none is ever freed, so that every tensor can be read after a run (a check
// of each kernel's output).
MemoryPlan plan_memory(const ExecutableGraph& graph, bool keep_every_tensor = false);

}  // namespace tessera::runtime
