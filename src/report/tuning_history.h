#pragma once
// A tuning run as the report draws it, read back from its logs: per task, the
// trials in the order they were measured (cost, time since the run began,
// error kind), the confirmed leaders and the best; across tasks, the task
// scheduler's view (the network's estimated latency after each trial, and
// how many trials each task got). Damaged lines are counted, not fatal.
#include <map>
#include <string>
#include <vector>

#include "records/record.h"

namespace tessera::report {

struct Trial {
  int number = 0;      // the task's own count, from 1
  int log_number = 0;  // the count across all tasks of the run, from 1
  double elapsed = 0;  // seconds since the run's first record (their timestamps)
  double seconds = 0;  // MeasureResult::rank_cost(); +inf when it failed
  std::string error;   // measure::to_string of the kind: "none", "compile-host", ...
};

struct TaskHistory {
  std::string task_name;  // "conv2d_NCHWc.x86", or "autoschedule"
  std::string workload_key;
  std::string target;                 // the match key of its records' target ("llvm avx512 512-bit threads=1")
  std::string target_text;            // its first record's target as written (Target::str())
  std::string description;            // for people: the operator and its shapes, or the graph nodes
  double flop = 0;                    // per run of the kernel; 0 when neither the log nor a model says
  int weight = 1;                     // the model's kernels it stands for (1 without a model)
  std::vector<Trial> trials;          // the search's measurements, in log order
  std::vector<Trial> confirmed;       // the leaders' re-measurements at the end
  std::map<std::string, int> errors;  // failed trials by kind
  double best_seconds = 0;            // the record pick-best keeps (a confirmed one first); +inf when none is valid

  // flop / seconds in GFLOPS, 0 when the flop count is unknown or the cost is not finite.
  double gflops(double seconds) const;
};

struct TuningHistory {
  std::vector<std::string> logs;
  size_t records = 0;                // good lines read
  size_t damaged = 0;                // lines skipped (records::for_each_record's warnings)
  std::vector<std::string> damage;   // the first few of those warnings, as printed
  std::vector<std::string> targets;  // the distinct match keys of the records, in order of appearance
  std::vector<TaskHistory> tasks;    // in order of their first record
  double wall_seconds = 0;           // from the first record to the last

  // The task scheduler's estimate of the network's latency after each trial
  // of the run (log order) on `target` (a match key): the sum over its tasks
  // of weight x best cost so far, a task not reached yet counted at its first
  // valid measurement (the hand-written schedule both searches measure
  // first), a task with none left out.
  std::vector<std::pair<int, double>> estimated_latency(const std::string& target) const;
};

// Reads `logs` in order; a file that cannot be opened throws tessera::Error
// naming it, a damaged line is counted and skipped. A template task's flop
// count comes from its operator and arguments as the record names them; an
// auto-scheduler task's needs the model (set `flop` afterwards).
TuningHistory read_tuning_history(const std::vector<std::string>& logs);

}  // namespace tessera::report
