#include "jit/tune_network.h"

#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "build/build.h"
#include "build/extract_tasks.h"
#include "measure/builder.h"
#include "measure/runner.h"
#include "records/log_file.h"
#include "tessera/error.h"

namespace tessera::jit {

autotvm::TuneTasksSummary tune_network(const graph::Graph& model, const codegen::Target& target,
                                       const TuneNetworkOptions& options, std::ostream& out, std::ostream& warnings) {
  if (options.log.empty()) throw Error("tune_network: a log file is required (it is the tuning's state)");
  codegen::require_runnable_here(target);
  const graph::Graph optimized = build::optimize_for_target(model, target, {}, /*winograd=*/true);
  const std::vector<build::NetworkTask> tasks = build::extract_tasks(optimized, target);
  std::set<std::string> recorded;
  if (options.only_missing) {
    std::vector<std::string> logs = options.known;
    logs.push_back(options.log);
    for (const auto& log : logs)
      if (std::filesystem::exists(log))
        for (const auto& r : records::load_records(log, warnings)) recorded.insert(r.workload_key);
  }
  std::vector<autotvm::WeightedTask> weighted;
  for (const build::NetworkTask& t : tasks)
    if (!recorded.count(t.task.workload_key())) weighted.push_back({&t.task, t.weight});
  out << fmt::format("{} tasks, {} to tune; log {}\n", tasks.size(), weighted.size(), options.log);
  if (weighted.empty()) return {};

  autotvm::TuneTasksOptions tune;
  tune.tuner = options.tuner;
  tune.n_trial = options.trials;
  tune.early_stopping = options.early_stopping;
  tune.time_budget_min = options.time_budget_min;
  tune.log = options.log;
  tune.stop = options.stop;
  measure::LocalBuilder builder;
  const measure::LocalRunnerOptions run = autotvm::search_runner_options(target.threads);
  measure::LocalRunner runner(run);
  measure::LocalRunner confirm_runner(autotvm::confirm_runner_options(run));
  return autotvm::tune_tasks(weighted, tune, autotvm::MeasureOption{&builder, &runner, &confirm_runner}, out, warnings);
}

}  // namespace tessera::jit
