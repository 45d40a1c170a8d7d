#pragma once
// Timing a function the way TVM's time evaluator does: `repeat` measurements,
// each the mean of `number` runs; `number` grows until one measurement takes at
// least `min_repeat_ms`. Optionally flushes the CPU caches of the arguments
// before every run so that each run starts cold.
#include <functional>
#include <utility>
#include <vector>

namespace tessera::measure {

struct TimeOptions {
  int number = 1;
  int repeat = 3;
  int min_repeat_ms = 0;
  bool enable_cpu_cache_flush = false;
};

// Memory to evict from the caches before each run (pointer, bytes).
using FlushList = std::vector<std::pair<const void*, size_t>>;

// Seconds per run, one entry per repeat.
std::vector<double> time_function(const std::function<void()>& f, const TimeOptions& options,
                                  const FlushList& flush = {});

}  // namespace tessera::measure
