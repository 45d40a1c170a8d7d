#pragma once
// What the task scheduler needs of one task's search: run a round of n
// trials, and say how fast the best schedule so far is. The auto-scheduler's
// TaskSearch implements it; tests give synthetic tasks with known curves.
#include <cstdint>

namespace tessera::autoschedule {

class TaskTuner {
 public:
  virtual ~TaskTuner() = default;
  // Measures up to `n` new candidates.
  virtual void tune_round(int n) = 0;
  // Seconds of the best valid schedule so far; +inf when there is none.
  virtual double best_cost() const = 0;
  virtual int64_t trials() const = 0;
  // Nothing left to measure (every candidate the policy can make was measured).
  virtual bool exhausted() const { return false; }
};

}  // namespace tessera::autoschedule
