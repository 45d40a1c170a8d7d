#pragma once
// A tuner and the logs of earlier runs: the configs of its own task already in
// a log are never measured again (a resumed run), and measurements of other
// tasks on the same target warm-start its cost model (transfer learning).
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <ostream>
#include <vector>

#include "autotvm/tuner.h"
#include "records/apply_history_best.h"
#include "records/record.h"

namespace tessera::autotvm {

// The record of one measurement of `config` of `task` (its trace when the
// config instantiates).
records::Record make_record(const Task& task, const ConfigEntity& config, const measure::MeasureResult& result);

// What a record says about its task: {"op": "conv2d", "args": {...}}, enough
// for create_task to build the task again.
nlohmann::json workload_json(const Task& task);

// Feeds `records` to `tuner`: its task's configs are marked measured (those
// whose result is not MeasureResult::conclusive() are left to measure again) and,
// with the other tasks' records when `other_tasks` is set, handed to
// Tuner::load_history. Only records of a matching target count
// (target::same_code_target; a note says when some match only because they
// state no thread count); a record whose task cannot be rebuilt is skipped
// with a warning. `known_tasks` (by workload key) supplies the DAGs of other
// tasks that create_task cannot rebuild from a record (a network's kernels
// with their fused epilogues). Returns the number of distinct configs of
// `task` found.
int64_t load_history(Tuner& tuner, const Task& task, const std::vector<records::Record>& records, bool other_tasks,
                     std::ostream& warnings, const std::map<std::string, const Task*>& known_tasks = {});

// Which of the records (by workload key, in log order) a cost model learns
// from: all of its own task's, and of every other task an equal share of
// `max_other` taken at an even stride through its records, so that a long log
// teaches the model about all of its tasks rather than the first few.
// Positions ascending.
std::vector<size_t> rows_to_learn(const std::vector<std::string>& keys, const std::string& own_key, size_t max_other);

// The schedule a task runs with: its best record's config (or, for a record
// without one, its trace), else the fallback config after history's
// once-per-workload warning. A record that cannot be used (neither its config
// nor its trace replays on the task) is named in a warning and the next best
// is tried; when none can, the fallback config runs. `record` is the record
// used, if any.
struct Dispatched {
  schedule::Trace trace;
  std::optional<records::Record> record;
};
Dispatched dispatch(const Task& task, records::ApplyHistoryBest& history, std::ostream& warnings);

}  // namespace tessera::autotvm
