#pragma once
// Searching one task with the auto-scheduler: batches from the sketch
// policy are built and run by the measure layer, every result is appended to
// the tuning log (a record with the schedule's trace and no config), and
// the policy's cost model learns from it. The log is the state: a rerun with
// the same log measures nothing twice and starts its model from the log.
#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "autoschedule/sketch_policy.h"
#include "codegen/target.h"
#include "measure/runner.h"

namespace tessera::autoschedule {

// The task name records of the auto-scheduler carry.
inline constexpr const char* kAutoScheduleTaskName = "autoschedule";

struct SearchTask {
  std::string name;  // what the progress line calls it, e.g. "conv2d"
  ir::ComputeDAG dag;
  codegen::Target target;
  nlohmann::json workload;  // the operator's arguments, for the record
};

struct SearchOptions {
  int n_trial = 200;
  int early_stopping = 0;  // stop after this many trials without a better schedule; 0: never
  int batch_size = 16;
  std::string log;         // required
  const std::atomic<bool>* stop = nullptr;  // set: the batch in flight is dropped, the search returns
  uint64_t seed = 0;
  EvolutionOptions evolution;
};

struct SearchResult {
  int64_t trials = 0;        // measured in this call
  int64_t resumed = 0;       // records of this task found in the log
  double best_cost = 0;      // seconds, +inf when nothing valid was measured
  schedule::Trace best_trace;
  bool stopped = false;
};

// Prints "[autoschedule conv2d]  Current/Best: ... GFLOPS | Progress: (n/N) | s"
// after every batch to `out`, warnings about the log to `warnings`.
SearchResult search_task(const SearchTask& task, CostModel& model, const SearchOptions& options,
                         measure::Builder& builder, measure::Runner& runner, std::ostream& out,
                         std::ostream& warnings);

}  // namespace tessera::autoschedule
