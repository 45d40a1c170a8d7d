#include "report/tuning_history.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "autotvm/task.h"
#include "records/log_file.h"
#include "records/pick_best.h"
#include "records/target_match.h"

namespace tessera::report {

namespace {

constexpr size_t kDamageShown = 5;

// The record's operator and shapes, and its flop count, for a template task
// (its workload names the operator and arguments); for an auto-scheduler
// task, the graph nodes it computes and 0 (its DAG is not in the record).
std::pair<std::string, double> describe(const records::Record& r, const target::Target* target) {
  if (r.workload.is_object() && r.workload.contains("nodes") && r.workload["nodes"].is_string())
    return {r.workload["nodes"].get<std::string>(), 0.0};
  if (target != nullptr && r.workload.is_object() && r.workload.contains("op") && r.workload.contains("args")) {
    try {
      const std::string op = r.workload["op"].get<std::string>();
      autotvm::Task task = autotvm::create_task(op, autotvm::args_from_json(op, r.workload["args"]), *target);
      if (r.workload.contains("epilogue") && r.workload["epilogue"].is_string())
        task.epilogue = r.workload["epilogue"].get<std::string>();
      return {task.describe(), task.flop()};
    } catch (const std::exception&) {
      // A record of an operator this build does not know: named by its JSON below.
    }
  }
  return {r.workload.is_null() ? r.task_name : r.workload.dump(), 0.0};
}

}  // namespace

double TaskHistory::gflops(double seconds) const {
  if (flop <= 0 || !std::isfinite(seconds) || seconds <= 0) return 0;
  return flop / seconds / 1e9;
}

std::vector<std::pair<int, double>> TuningHistory::estimated_latency(const std::string& target) const {
  struct Event {
    int log_number;
    size_t task;
    double seconds;
  };
  std::vector<Event> events;
  // A task the run has not reached yet counts at its first measurement: the
  // hand-written schedule, which both searches measure first.
  std::map<size_t, double> best;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].target != target) continue;
    for (const Trial& t : tasks[i].trials) {
      events.push_back({t.log_number, i, t.seconds});
      if (!best.count(i) && std::isfinite(t.seconds)) best[i] = t.seconds;
    }
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.log_number < b.log_number; });
  std::vector<std::pair<int, double>> out;
  for (const Event& e : events) {
    if (std::isfinite(e.seconds) && e.seconds < best[e.task]) best[e.task] = e.seconds;
    double total = 0;
    for (const auto& [task, seconds] : best) total += tasks[task].weight * seconds;
    out.push_back({e.log_number, total});
  }
  return out;
}

TuningHistory read_tuning_history(const std::vector<std::string>& logs) {
  TuningHistory h;
  h.logs = logs;
  std::vector<records::Record> all;
  for (const std::string& log : logs) {
    std::ostringstream warnings;
    records::for_each_record(log, warnings, [&](records::Record&& r) { all.push_back(std::move(r)); });
    std::istringstream lines(warnings.str());
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) continue;
      ++h.damaged;
      if (h.damage.size() < kDamageShown) h.damage.push_back(line);
    }
  }
  h.records = all.size();
  double first = std::numeric_limits<double>::infinity(), last = 0;
  for (const records::Record& r : all)
    if (r.result.timestamp > 0) first = std::min(first, r.result.timestamp), last = std::max(last, r.result.timestamp);
  if (std::isfinite(first)) h.wall_seconds = last - first;

  records::RecordTargets targets;
  std::map<std::string, size_t> task_of;
  std::map<size_t, const records::Record*> best_of;
  int log_number = 0;
  for (const records::Record& r : all) {
    const std::string target = targets.match_key(r);
    if (std::find(h.targets.begin(), h.targets.end(), target) == h.targets.end()) h.targets.push_back(target);
    const std::string key = r.task_name + "\n" + r.workload_key + "\n" + target;
    auto [it, added] = task_of.emplace(key, h.tasks.size());
    if (added) {
      TaskHistory t;
      t.task_name = r.task_name;
      t.workload_key = r.workload_key;
      t.target = target;
      t.target_text = r.target;
      std::tie(t.description, t.flop) = describe(r, targets.of(r));
      h.tasks.push_back(std::move(t));
    }
    TaskHistory& task = h.tasks[it->second];
    Trial trial;
    trial.elapsed = std::isfinite(first) && r.result.timestamp > 0 ? r.result.timestamp - first : 0;
    trial.seconds = r.result.rank_cost();
    trial.error = measure::to_string(r.result.error);
    if (r.confirmed) {
      trial.number = static_cast<int>(task.confirmed.size()) + 1;
      trial.log_number = log_number;
      task.confirmed.push_back(trial);
    } else {
      trial.number = static_cast<int>(task.trials.size()) + 1;
      trial.log_number = ++log_number;
      if (!r.valid()) ++task.errors[r.result.error == measure::ErrorKind::None ? "no-cost" : trial.error];
      task.trials.push_back(trial);
    }
    if (r.valid()) {
      const records::Record*& best = best_of[it->second];
      if (best == nullptr || records::better(r, *best)) best = &r;
    }
  }
  for (size_t i = 0; i < h.tasks.size(); ++i)
    h.tasks[i].best_seconds =
        best_of.count(i) ? best_of[i]->result.rank_cost() : std::numeric_limits<double>::infinity();
  return h;
}

}  // namespace tessera::report
