#pragma once
// A small task for the measure tests: C[i, j] = A[i, j] + B[i, j].
#include <sys/wait.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "ir/compute_dag.h"
#include "measure/runner.h"

namespace tessera::measure::testing {

constexpr int64_t kRows = 16, kCols = 24;

inline ir::ComputeDAG add_dag() {
  auto a = ir::placeholder({kRows, kCols}, "A");
  auto b = ir::placeholder({kRows, kCols}, "B");
  auto c = ir::compute(
      {kRows, kCols},
      [&](const std::vector<ir::Var>& v) { return ir::load(a, {v[0], v[1]}) + ir::load(b, {v[0], v[1]}); },
      "C", "elemwise", {"i", "j"});
  return ir::ComputeDAG({c});
}

// The reference of add_dag, plus `offset` so that a test can make it wrong on purpose.
inline ReferenceFn add_reference(float offset = 0) {
  return [offset](const std::vector<const float*>& in, float* out) {
    for (int64_t k = 0; k < kRows * kCols; ++k) out[k] = in[0][k] + in[1][k] + offset;
  };
}

// Open file descriptors of this process.
inline int count_open_fds() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// True when this process has no child left, running or zombie.
inline bool has_no_children() { return waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }

}  // namespace tessera::measure::testing
