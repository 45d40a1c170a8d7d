#include "interleaved_timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>

#include "measure/timer.h"

namespace tessera::baseline {

double SideTiming::min_cost() const {
  if (costs.empty()) return std::numeric_limits<double>::infinity();
  return *std::min_element(costs.begin(), costs.end());
}

double SideTiming::mean_cost() const {
  if (costs.empty()) return std::numeric_limits<double>::infinity();
  return std::accumulate(costs.begin(), costs.end(), 0.0) / costs.size();
}

namespace {

// One measurement of f. After the first, `number` starts where the first left
// it, so later rounds do not spend time growing it again.
void measure_round(const std::function<void()>& f, const InterleavedOptions& options,
                   SideTiming& side) {
  std::this_thread::sleep_for(std::chrono::milliseconds(options.settle_ms));
  measure::TimeOptions time;
  time.repeat = 1;
  time.min_repeat_ms = options.min_repeat_ms;
  if (!side.costs.empty() && side.costs.front() > 0)
    time.number = std::max(1, int(std::ceil(options.min_repeat_ms / 1000.0 / side.costs.front())));
  side.costs.push_back(measure::time_function(f, time).front());
}

}  // namespace

std::pair<SideTiming, SideTiming> time_interleaved(const std::function<void()>& a,
                                                   const std::function<void()>& b,
                                                   const InterleavedOptions& options) {
  SideTiming first, second;
  for (int r = 0; r < std::max(1, options.rounds); ++r) {
    measure_round(a, options, first);
    if (b) measure_round(b, options, second);
  }
  return {first, second};
}

double gflops(double flop_count, double seconds) {
  return seconds > 0 ? flop_count / seconds * 1e-9 : 0.0;
}

}  // namespace tessera::baseline
