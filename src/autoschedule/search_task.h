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
#include "autoschedule/task_tuner.h"
#include "target/target.h"
#include "measure/runner.h"
#include "records/log_file.h"

namespace tessera::autoschedule {

using records::kAutoScheduleTaskName;

struct SearchTask {
  std::string name;  // what the progress line calls it, e.g. "conv2d"
  ir::ComputeDAG dag;
  target::Target target;
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
  // At the end the fastest `confirm_leaders` schedules are measured again in
  // `confirm_rounds` interleaved rounds (on `confirm_runner`, longer runs;
  // null: the search's runner), recorded with "confirmed": true, and the
  // best median of those is the best (as AutoTVM's tuners do).
  int confirm_leaders = 5, confirm_rounds = 3;
  measure::Runner* confirm_runner = nullptr;
};

struct SearchResult {
  int64_t trials = 0;        // measured in this call
  int64_t resumed = 0;       // records of this task found in the log
  double best_cost = 0;      // seconds, +inf when nothing valid was measured
  schedule::Trace best_trace;
  bool stopped = false;
};

// One task's search state, one round at a time (the task scheduler's unit).
class TaskSearch : public TaskTuner {
 public:
  // `writer` is the tuning log every measurement is appended to; `progress`,
  // when not null, gets the progress line after every round.
  TaskSearch(const SearchTask& task, CostModel& model, const SearchOptions& options, measure::Builder& builder,
             measure::Runner& runner, records::RecordWriter& writer, std::ostream* progress = nullptr);

  // The log's records of this task (same DAG, a target they apply to): never
  // measured again, the best of them is the best so far, and the model
  // learns from them. Returns how many there were.
  int64_t resume(const std::vector<records::Record>& log);
  void tune_round(int n) override;
  // The leaders' re-measurement (SearchOptions::confirm_leaders); nothing
  // when the log already holds this task's confirmed records and this
  // process measured nothing new.
  void confirm_leaders();
  double best_cost() const override { return best_cost_; }
  int64_t trials() const override { return resumed_ + measured_; }
  bool exhausted() const override { return exhausted_; }

  const SearchTask& task() const { return task_; }
  const schedule::Trace& best_trace() const { return best_trace_; }
  int64_t measured() const { return measured_; }   // in this process
  int64_t resumed() const { return resumed_; }
  int64_t last_improvement() const { return last_improvement_; }  // trials() when the best was found
  bool stopped() const { return stopped_; }
  // Where this process's rounds spent their time: choosing the candidates
  // (the policy and its cost model), building them, measuring them.
  struct Phases {
    double choosing = 0, building = 0, measuring = 0;
  };
  const Phases& phases() const { return phases_; }

 private:
  SearchTask task_;
  SearchOptions options_;
  SketchPolicy policy_;
  measure::Builder& builder_;
  measure::Runner& runner_;
  records::RecordWriter& writer_;
  std::ostream* progress_;
  double best_cost_;
  schedule::Trace best_trace_;
  int64_t resumed_ = 0, measured_ = 0, last_improvement_ = 0;
  bool exhausted_ = false, stopped_ = false, confirmed_ = false;
  double seconds_ = 0;
  Phases phases_;
  std::vector<std::pair<double, schedule::Trace>> leaders_;  // fastest valid schedules, fastest first
  // The kernel's untuned schedule (untuned_schedule: what a build runs
  // without a record), measured in the first round unless the log holds it:
  // the task's best is then never slower than the untuned build (a few
  // trials of a large space can be).
  schedule::Trace untuned_;
  bool untuned_measured_ = false;

  void note_result(const schedule::Trace& trace, double cost);
};

// Prints "[autoschedule conv2d]  Current/Best: ... GFLOPS | Progress: (n/N) | s"
// after every batch to `out`, warnings about the log to `warnings`.
SearchResult search_task(const SearchTask& task, CostModel& model, const SearchOptions& options,
                         measure::Builder& builder, measure::Runner& runner, std::ostream& out,
                         std::ostream& warnings);

}  // namespace tessera::autoschedule
