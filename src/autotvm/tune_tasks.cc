#include "autotvm/tune_tasks.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>

#include "autotvm/callback.h"
#include "autotvm/history.h"
#include "records/log_file.h"
#include "records/target_match.h"
#include "tessera/error.h"

namespace tessera::autotvm {

namespace {

double share(const WeightedTask& t) { return t.weight * std::max(t.task->flop(), 1.0); }

// Whether the log shows the task finished: its leaders were re-measured, or
// it holds every config the task may measure and no confirmation is asked
// for (a run killed between its last batch and the confirmation is not).
bool finished(const Task& task, const std::vector<records::Record>& log, int64_t budget, bool confirms) {
  records::RecordTargets targets;
  std::set<int64_t> configs;
  for (const records::Record& r : log) {
    if (r.workload_key != task.workload_key() || !targets.applies(r, task.target)) continue;
    if (r.confirmed) return true;
    if (r.config_index && r.result.conclusive()) configs.insert(*r.config_index);
  }
  return !confirms && static_cast<int64_t>(configs.size()) >= budget;
}

}  // namespace

std::vector<double> split_time_budget(const std::vector<WeightedTask>& tasks, double total_s) {
  double sum = 0;
  for (const WeightedTask& t : tasks) sum += share(t);
  std::vector<double> seconds;
  for (const WeightedTask& t : tasks) seconds.push_back(sum > 0 ? total_s * share(t) / sum : 0);
  return seconds;
}

TuneTasksSummary tune_tasks(const std::vector<WeightedTask>& tasks, const TuneTasksOptions& options,
                            const MeasureOption& measure, std::ostream& out, std::ostream& warnings) {
  if (options.log.empty()) throw Error("tune_tasks: a log file is required (it is what makes a run resumable)");
  const auto began = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(); };
  std::map<std::string, const Task*> known;
  for (const WeightedTask& t : tasks) known[t.task->workload_key()] = t.task;

  // Read once; every batch tuned below is added as it reaches the file.
  std::vector<records::Record> log = std::filesystem::exists(options.log) ? records::load_records(options.log, warnings)
                                                                          : std::vector<records::Record>{};
  TuneTasksSummary summary;
  const int n = static_cast<int>(tasks.size());
  for (int i = 0; i < n; ++i) {
    const Task& task = *tasks[i].task;
    const std::string prefix = fmt::format("[Task {:2d}/{:2d}] ", i + 1, n);
    const int64_t budget = std::min<int64_t>(options.n_trial, task.space.size());
    if (finished(task, log, budget, options.confirm_leaders > 0 && options.confirm_rounds > 0)) {
      out << prefix << "already tuned (its records are in " << options.log << ")\n";
      ++summary.already_done;
      continue;
    }
    auto tuner = make_tuner(options.tuner, task, options.seed + static_cast<uint64_t>(i));
    const int64_t resumed = load_history(*tuner, task, log, options.transfer_learning, warnings, known);
    if (resumed > 0) out << prefix << "resuming: " << resumed << " configs already measured\n";

    TuneOptions tune;
    tune.n_trial = static_cast<int>(std::max<int64_t>(0, budget - resumed));
    tune.early_stopping = options.early_stopping;
    tune.confirm_leaders = options.confirm_leaders;
    tune.confirm_rounds = options.confirm_rounds;
    tune.stop = options.stop;
    if (options.time_budget_min > 0) {
      const std::vector<WeightedTask> rest(tasks.begin() + i, tasks.end());
      const double left = options.time_budget_min * 60 - elapsed();
      tune.time_budget_s = std::max(1.0, split_time_budget(rest, left).front());
    }
    out.flush();
    const std::vector<Callback> callbacks = {progress_bar(tune.n_trial, prefix, out), log_to_file(options.log, &log)};
    tuner->tune(tune, measure, callbacks);
    summary.trials += tuner->trials();
    ++summary.tuned;
    if (tuner->stopped()) {
      summary.stopped = true;
      break;
    }
  }
  summary.seconds = elapsed();
  return summary;
}

}  // namespace tessera::autotvm
