#pragma once
// Tuning every task of a network in turn (seed 000's tune_tasks): one tuner
// per task, its progress line "[Task  3/12] ...", every measurement appended
// to one log, transfer learning from the records already in the log, and
// resuming from that log after a crash or a kill at any moment.
#include <atomic>
#include <iosfwd>
#include <string>
#include <vector>

#include "autotvm/tuner.h"

namespace tessera::autotvm {

struct WeightedTask {
  const Task* task = nullptr;
  int weight = 1;  // how many kernels of the network run it
};

struct TuneTasksOptions {
  std::string tuner = "xgb";
  int n_trial = 1000;      // per task, capped by its config space
  int early_stopping = 0;  // per task; 0 = never
  // Minutes for all tasks; 0 = no limit. Each task gets the time left times
  // its share of weight x FLOPs among the tasks not yet tuned, so time a task
  // leaves unused (early stopping) goes to the rest.
  double time_budget_min = 0;
  std::string log;  // the tuning log; required
  // The cost model of each task starts from the log's records of the other
  // tasks (seed: use_transfer_learning).
  bool transfer_learning = true;
  int confirm_leaders = 5, confirm_rounds = 3;  // see TuneOptions
  uint64_t seed = 0;
  const std::atomic<bool>* stop = nullptr;  // see TuneOptions::stop
};

struct TuneTasksSummary {
  int tuned = 0;         // tasks tuned in this call
  int already_done = 0;  // tasks the log shows finished (their leaders confirmed)
  int64_t trials = 0;    // measured in this call
  bool stopped = false;  // TuneTasksOptions::stop ended it
  double seconds = 0;
};

// A task is finished when the log holds its leaders' re-measurement (the
// last step of tune()) or as many distinct configs as it may measure; a
// finished task is not tuned again, an unfinished one goes on where it
// stopped and never measures a config twice. Progress goes to `out`,
// warnings about the log to `warnings`. Throws tessera::Error when the log
// cannot be written.
TuneTasksSummary tune_tasks(const std::vector<WeightedTask>& tasks, const TuneTasksOptions& options,
                            const MeasureOption& measure, std::ostream& out, std::ostream& warnings);

// The seconds each task may use under a budget of `total_s`, as tune_tasks
// splits it when every task uses all of its share: proportional to weight x
// FLOPs.
std::vector<double> split_time_budget(const std::vector<WeightedTask>& tasks, double total_s);

}  // namespace tessera::autotvm
