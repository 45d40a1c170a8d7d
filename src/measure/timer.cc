#include "measure/timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tessera::measure {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Evicts every cache line of the ranges, so the next run reads them from memory.
void flush_caches(const FlushList& flush) {
#if defined(__x86_64__) || defined(__i386__)
  constexpr uintptr_t kLine = 64;
  for (const auto& [ptr, bytes] : flush) {
    if (ptr == nullptr || bytes == 0) continue;
    uintptr_t begin = reinterpret_cast<uintptr_t>(ptr) & ~(kLine - 1);
    uintptr_t end = reinterpret_cast<uintptr_t>(ptr) + bytes;
    for (uintptr_t p = begin; p < end; p += kLine) _mm_clflush(reinterpret_cast<const void*>(p));
  }
  _mm_mfence();  // the flushes complete before the timed run starts
#else
  (void)flush;  // no portable user-space cache flush; runs stay warm
#endif
}

// Seconds for `number` runs of f. With a flush list, each run is timed on its
// own so that the flushing is not counted.
double measure_once(const std::function<void()>& f, int number, const FlushList* flush) {
  if (flush == nullptr) {
    auto start = Clock::now();
    for (int i = 0; i < number; ++i) f();
    return seconds_since(start);
  }
  double total = 0;
  for (int i = 0; i < number; ++i) {
    flush_caches(*flush);
    auto start = Clock::now();
    f();
    total += seconds_since(start);
  }
  return total;
}

}  // namespace

// Keeps `number` finite for a function that takes no measurable time.
constexpr int kMaxNumber = 1 << 30;

std::vector<double> time_function(const std::function<void()>& f, const TimeOptions& options,
                                  const FlushList& flush) {
  const FlushList* flush_list = options.enable_cpu_cache_flush ? &flush : nullptr;
  int number = std::max(1, options.number);
  const double min_seconds = options.min_repeat_ms / 1000.0;

  f();  // warm-up: first-touch page faults, lazy binding, thread-pool start

  std::vector<double> costs;
  costs.reserve(std::max(0, options.repeat));
  for (int r = 0; r < options.repeat; ++r) {
    double elapsed = measure_once(f, number, flush_list);
    // Too short to be trusted: run more per measurement and measure again.
    // The factor is estimated from this measurement but at least doubles, so
    // the loop ends quickly even when the estimate is off.
    while (elapsed < min_seconds && number < kMaxNumber) {
      double estimate = elapsed > 0 ? std::ceil(number * 1.1 * min_seconds / elapsed) : 0.0;
      double grown = std::max(2.0 * number, estimate);
      number = static_cast<int>(std::min<double>(grown, kMaxNumber));
      elapsed = measure_once(f, number, flush_list);
    }
    costs.push_back(elapsed / number);
  }
  return costs;
}

}  // namespace tessera::measure
