#include "autotvm/history.h"

#include <algorithm>
#include <map>
#include <set>

#include "records/target_match.h"
#include "tessera/error.h"

namespace tessera::autotvm {

nlohmann::json workload_json(const Task& task) {
  if (!task.accelerator.is_null()) return task.accelerator;
  nlohmann::json j = {{"op", task.op}, {"args", args_to_json(task.op, task.args)}};
  if (!task.epilogue.empty()) j["epilogue"] = task.epilogue;
  return j;
}

namespace {

// The DAG another task's record measured: a known task's, else rebuilt from
// the record's operator and arguments. Throws when it cannot be rebuilt.
ir::ComputeDAG dag_of(const records::Record& r, const target::Target& target,
                      const std::map<std::string, const Task*>& known_tasks) {
  if (auto known = known_tasks.find(r.workload_key); known != known_tasks.end()) return known->second->workload.dag;
  const std::string op = r.workload.at("op").get<std::string>();
  return create_task(op, args_from_json(op, r.workload.at("args")), target).workload.dag;
}

}  // namespace

records::Record make_record(const Task& task, const ConfigEntity& config, const measure::MeasureResult& result) {
  records::Record r;
  r.workload_key = task.workload_key();
  r.task_name = task.name();
  r.workload = workload_json(task);
  r.target = task.target.str();
  r.config_index = config.index();
  r.config = config.to_json();
  try {
    r.trace = task.instantiate(config);
  } catch (const std::exception&) {
    // The result says the config could not be instantiated.
  }
  r.result = result;
  return r;
}

int64_t load_history(Tuner& tuner, const Task& task, const std::vector<records::Record>& records, bool other_tasks,
                     std::ostream& warnings, const std::map<std::string, const Task*>& known_tasks) {
  const std::string key = task.workload_key();
  std::vector<measure::MeasureInput> inputs;
  std::vector<measure::MeasureResult> results;
  std::set<int64_t> own;  // distinct configs: a leader's re-measurement repeats one
  int64_t stale = 0;
  records::RecordTargets targets;
  std::string loose;  // why records of another thread count were let in, if they were
  int64_t loose_count = 0;
  for (const auto& r : records) {
    if (!targets.applies(r, task.target)) continue;
    if (r.workload_key == key) {
      if (!r.config_index || *r.config_index < 0 || *r.config_index >= task.space.size()) continue;
      if (!r.result.conclusive()) continue;  // a timeout or the like: measured again
      // A template that gained or lost knobs numbers its configs anew: an old
      // record's index would name another config.
      if (r.config.is_object() && r.config != task.space.get(*r.config_index).to_json()) {
        ++stale;
        continue;
      }
      own.insert(*r.config_index);
      tuner.mark_measured(*r.config_index, r.result);
      inputs.push_back(task.measure_input(task.space.get(*r.config_index)));
    } else if (other_tasks) {
      try {
        inputs.push_back(measure::MeasureInput{dag_of(r, task.target, known_tasks), r.trace, task.target});
      } catch (const std::exception& e) {
        warnings << "warning: skipped a history record of task " << r.task_name << ": " << e.what() << "\n";
        continue;
      }
    } else {
      continue;
    }
    results.push_back(r.result);
    if (std::string why = records::loose_thread_match(*targets.of(r), task.target); !why.empty()) {
      loose = why;
      ++loose_count;
    }
  }
  if (!inputs.empty()) tuner.load_history(inputs, results);
  if (stale > 0)
    warnings << "warning: " << stale << " records of " << task.describe()
             << " were made with another version of its config space; they are not reused\n";
  if (loose_count > 0)
    warnings << "note: " << loose_count << " records used for " << task.describe() << " were " << loose << "\n";
  return static_cast<int64_t>(own.size());
}

std::vector<size_t> rows_to_learn(const std::vector<std::string>& keys, const std::string& own_key, size_t max_other) {
  std::map<std::string, size_t> records_of;
  for (const std::string& k : keys)
    if (k != own_key) ++records_of[k];
  const size_t share = records_of.empty() ? 0 : std::max<size_t>(1, max_other / records_of.size());
  std::map<std::string, size_t> seen;
  std::vector<size_t> rows;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] != own_key) {
      const size_t stride = (records_of[keys[i]] + share - 1) / share;
      if (seen[keys[i]]++ % stride != 0) continue;
    }
    rows.push_back(i);
  }
  return rows;
}

namespace {

// The schedule a record stands for: its config in the current template, else
// (the template changed since) the trace it recorded. Throws when neither
// replays on the task.
schedule::Trace schedule_of(const Task& task, const records::Record& best, std::ostream& warnings) {
  if (best.config.is_object() && !best.config.empty()) {
    try {
      return task.instantiate(task.space.from_json(best.config));
    } catch (const std::exception& e) {
      if (best.trace.steps().empty()) throw;
      warnings << "note: the best record of " << task.describe() << " does not fit the current template (" << e.what()
               << "); using the schedule it recorded\n";
    }
  }
  best.trace.replay(task.workload.dag);  // validates: a damaged or crafted trace throws here, not in the compiler
  return best.trace;
}

}  // namespace

Dispatched dispatch(const Task& task, records::ApplyHistoryBest& history, std::ostream& warnings) {
  if (!history.lookup(task.workload_key(), task.target, task.describe(), warnings))
    return {task.instantiate(task.space.fallback()), std::nullopt};
  size_t skipped = 0;
  for (const records::Record& r : history.ranked(task.workload_key(), task.target)) {
    try {
      return {schedule_of(task, r, warnings), r};
    } catch (const std::exception& e) {
      if (skipped++ < 3)
        warnings << "warning: a record of " << task.describe() << " (config " << r.config.dump() << ") cannot be used ("
                 << e.what() << "); trying the next best\n";
    }
  }
  warnings << "warning: none of the " << skipped << " records of " << task.describe()
           << " can be used; using the fallback configuration\n";
  return {task.instantiate(task.space.fallback()), std::nullopt};
}

}  // namespace tessera::autotvm
