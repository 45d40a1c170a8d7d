#pragma once
// Splitting a network's trial budget over its tasks (Ansor's task
// scheduler). The objective is the network's estimated latency, the sum of
// weight x best cost over the tasks; after a warm-up round over every task,
// each round goes to the task whose next trials are expected to reduce that
// objective most. For task i with best cost g_i after t_i trials:
//
//   gradient_i = w_i * (alpha * backward_i + (1 - alpha) * forward_i)
//   backward_i = (g_i(now) - g_i(backward_window rounds ago)) / (their trials)
//   forward_i  = min(g_i - g_i / t_i,                  optimistic: the next
//                    beta * flop_i / best_speed_of_similar_tasks) - g_i
//                                                     round gains as much as
//                                                     one average round did
//
// where similar tasks share a tag (the same kind of DAG) and the second term
// says a task cannot get faster than its similar tasks' best speed times
// beta. The most negative gradient wins; ties and eps-greedy picks are random.
// A task that has gone `early_stopping` trials without improving is done.
//
// After every round the scheduler prints the seed's table:
//   |  ID  | Latency (ms) | Speed (GFLOPS) | Trials |
//   Estimated total latency: ... ms  Trials: ...  Used time : ... s  Next ID: ...
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <random>
#include <string>
#include <vector>

#include "autoschedule/task_tuner.h"

namespace tessera::autoschedule {

struct ScheduledTask {
  TaskTuner* tuner = nullptr;
  double weight = 1;  // kernels of the network that run this task
  double flop = 0;    // of one run of the task
  std::string tag;    // similar tasks share a tag
};

enum class TaskSchedulerStrategy { Gradient, RoundRobin };

struct TaskSchedulerOptions {
  TaskSchedulerStrategy strategy = TaskSchedulerStrategy::Gradient;
  int64_t total_trials = 1000;      // over all tasks
  int trials_per_round = 16;
  int early_stopping = 0;           // per task; 0: never
  double alpha = 0.2, beta = 2.0;
  int backward_window = 3;          // rounds of a task
  double eps_random = 0.05;
  uint64_t seed = 0;
  // Minutes for all tasks (0: no limit): no round starts after they are
  // spent; the round in flight finishes, its records kept.
  double time_budget_min = 0;
  const std::atomic<bool>* stop = nullptr;
};

class TaskScheduler {
 public:
  TaskScheduler(std::vector<ScheduledTask> tasks, TaskSchedulerOptions options);

  // Rounds until the trials or the time budget are spent, every task is
  // done, or stop is set.
  // The table goes to `out` after every round.
  void tune(std::ostream& out);

  // Sum of weight x best cost, seconds (+inf while a task has no valid schedule).
  double estimated_latency() const;
  int64_t total_trials() const;
  // The estimated latency after each round (for the gradient-vs-round-robin table).
  const std::vector<std::pair<int64_t, double>>& history() const { return history_; }
  // The task the next round goes to, or -1 when every task is done.
  int next_task();

 private:
  double gradient(size_t i) const;
  bool done(size_t i) const;
  void print_table(std::ostream& out, int next) const;

  std::vector<ScheduledTask> tasks_;
  TaskSchedulerOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::vector<std::pair<int64_t, double>>> curve_;  // per task: (trials, best cost) after each of its rounds
  std::vector<int64_t> last_improvement_;                       // per task: trials at its last better cost
  std::vector<bool> stalled_;                                   // per task: a round measured nothing
  std::vector<std::pair<int64_t, double>> history_;
  size_t warmed_up_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tessera::autoschedule
