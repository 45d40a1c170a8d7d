#pragma once
// Timing two implementations of one layer against each other in one process.
// Their measurements alternate, so a change in the machine's load or clock
// during the comparison hits both sides alike, and each side keeps its best.
#include <functional>
#include <vector>

namespace tessera::baseline {

struct SideTiming {
  std::vector<double> costs;  // seconds per run, one per round
  double min_cost() const;    // +inf without costs
  double mean_cost() const;
};

struct InterleavedOptions {
  int rounds = 5;           // measurements of each side
  int min_repeat_ms = 200;  // each measurement runs its function at least this long
  // Pause before each measurement: the worker threads of the side measured last
  // (oneDNN's OpenMP team, Tessera's pool) busy-wait for a while after their
  // last job and would otherwise take cores from the side measured next.
  int settle_ms = 30;
};

// rounds x (one measurement of a, one of b), each a measure::time_function repeat.
// Returns {a's timing, b's timing}. A null b times a alone.
std::pair<SideTiming, SideTiming> time_interleaved(const std::function<void()>& a,
                                                   const std::function<void()>& b,
                                                   const InterleavedOptions& options = {});

// Billions of floating point operations per second; 0 for a non-positive time.
double gflops(double flop_count, double seconds);

}  // namespace tessera::baseline
