#include "tune_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>

#include "autoschedule/search_task.h"
#include "autotvm/callback.h"
#include "autotvm/history.h"
#include "autotvm/task.h"
#include "autotvm/tuner.h"
#include "measure/builder.h"
#include "measure/runner.h"
#include "records/log_file.h"
#include "flag_checks.h"
#include "measure_flags.h"
#include "target_flags.h"
#include "tessera/error.h"

namespace tessera::cli {

CLI::App* add_tune_command(CLI::App& app, TuneCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("tune-op", "tune one operator with an AutoTVM template");
  add_operator_flags(cmd, o.op);
  cmd->add_option("--search", o.search, "templates (AutoTVM) or auto (the auto-scheduler, no template)")
      ->check(CLI::IsMember({"templates", "auto"}))
      ->capture_default_str();
  cmd->add_option("--tuner", o.tuner, "one of: " + fmt::format("{}", fmt::join(autotvm::tuner_names(), ", ")))
      ->capture_default_str();
  cmd->add_option("--trials", o.trials, "configs to measure")->capture_default_str();
  cmd->add_option("--early-stopping", o.early_stopping, "stop after N trials without improvement (0: never)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--log", o.log, "tuning log (JSON lines); an existing log resumes the run");
  cmd->add_option("--history", o.history, "earlier tuning log of other tasks to warm-start the cost model");
  cmd->add_option("--threads", o.threads, "threads the kernels run with (0: the target's, else one per core)")
      ->check(at_least(0))
      ->capture_default_str();
  add_target_flag(cmd, o.target, "target to tune for; must run on this host");
  cmd->add_option("--check", o.check, "check every candidate against the reference")->capture_default_str();
  add_measure_flags(cmd, o.measure);
  cmd->add_option("--seed", o.seed, "random seed of the tuner")->capture_default_str();
  return cmd;
}

namespace {

int run_tune_auto(const TuneCommandOptions& o, const ops::OpArgs& args, const target::Target& target) {
  if (o.log.empty()) throw Error("--search auto needs --log FILE (the log is the search's state)");
  if (!o.measure.remote()) target::require_runnable_here(target);
  const ops::Workload w = ops::make_workload(o.op.op, args);
  autoschedule::SearchTask task{o.op.op, w.dag, target, nlohmann::json{{"op", o.op.op}}};
  fmt::print("{}\nworkload key: {}\ntarget: {} ({})\n", w.dag.print(), w.dag.workload_key(), target.str(),
             target.match_key());
  std::fflush(stdout);
  measure::LocalBuilder builder(builder_options(o.measure));
  const measure::LocalRunnerOptions run = runner_options(o.measure, target.threads, o.check);
  const auto runner = make_runner(o.measure, run, o.check ? w.reference : nullptr);
  const auto confirm_runner = make_runner(o.measure, autotvm::confirm_runner_options(run));
  autoschedule::XgbStoreCostModel model(autoschedule::XgbStoreModelOptions{.seed = o.seed});
  autoschedule::SearchOptions search{.n_trial = o.trials,
                                     .early_stopping = o.early_stopping,
                                     .log = o.log,
                                     .seed = o.seed,
                                     .confirm_leaders = o.measure.confirm_leaders,
                                     .confirm_rounds = o.measure.confirm_rounds,
                                     .confirm_runner = confirm_runner.get()};
  const auto r = autoschedule::search_task(task, model, search, builder, *runner, std::cout, std::cerr);
  if (r.resumed) fmt::print("resumed from {}: {} schedules already measured\n", o.log, r.resumed);
  if (std::isfinite(r.best_cost))
    fmt::print("best: {:.2f} GFLOPS, {:.4f} ms{}\nschedule: {}\n", w.dag.flop_count() / r.best_cost / 1e9,
               r.best_cost * 1e3,
               o.measure.confirm_leaders > 0 ? fmt::format(" (median of {} rounds)", o.measure.confirm_rounds) : "",
               r.best_trace.dump());
  else
    fmt::print("no valid schedule found in {} trials\n", r.trials);
  return 0;
}

}  // namespace

int run_tune(const TuneCommandOptions& o) {
  const ops::OpArgs args = resolve(o.op);
  if (o.trials < 1) throw Error(fmt::format("--trials {}: must be at least 1", o.trials));
  require_dtype_runs_on(args, resolve_target(o.target, o.threads));
  if (o.search == "auto") return run_tune_auto(o, args, resolve_target(o.target, o.threads));
  if (o.op.op == "conv2d" && args.layout == "NHWC")
    throw Error("--layout NHWC: tune-op tunes conv2d in the templates' layout, NCHWc; leave --layout out");
  // The thread count is part of the target, so every record says what it was measured with.
  const target::Target target = resolve_target(o.target, o.threads);
  const int threads = target.threads;
  if (!o.measure.remote()) target::require_runnable_here(target);  // every candidate is measured on this host
  autotvm::Task task = autotvm::create_task(o.op.op, args, target);
  auto tuner = autotvm::make_tuner(o.tuner, task, o.seed);
  fmt::print("task: {}\nworkload key: {}\nconfig space: {} configs\ntarget: {} ({})\n", task.describe(),
             task.workload_key(), task.space.size(), target.str(), target.match_key());

  int64_t resumed = 0;
  if (!o.history.empty())
    autotvm::load_history(*tuner, task, records::load_records(o.history, std::cerr), /*other_tasks=*/true, std::cerr);
  if (!o.log.empty() && std::filesystem::exists(o.log)) {
    resumed = autotvm::load_history(*tuner, task, records::load_records(o.log, std::cerr), /*other_tasks=*/false,
                                    std::cerr);
    if (resumed) fmt::print("resuming from {}: {} configs already measured\n", o.log, resumed);
  }
  std::fflush(stdout);

  measure::LocalBuilder builder(builder_options(o.measure));
  const measure::LocalRunnerOptions run = runner_options(o.measure, threads, o.check);
  const auto runner = make_runner(o.measure, run, o.check ? task.workload.reference : nullptr);
  const auto confirm_runner = make_runner(o.measure, autotvm::confirm_runner_options(run));

  const int remaining = static_cast<int>(std::max<int64_t>(0, o.trials - resumed));
  std::vector<autotvm::Callback> callbacks = {autotvm::progress_bar(remaining, "[Task  1/ 1] ")};
  if (!o.log.empty()) callbacks.push_back(autotvm::log_to_file(o.log));
  autotvm::TuneOptions tune{.n_trial = remaining,
                            .early_stopping = o.early_stopping,
                            .confirm_leaders = o.measure.confirm_leaders,
                            .confirm_rounds = o.measure.confirm_rounds};
  tuner->tune(tune, autotvm::MeasureOption{&builder, runner.get(), confirm_runner.get()}, callbacks);

  if (tuner->best_flops() > 0)
    fmt::print("best: {:.2f} GFLOPS{}, config {}\n", tuner->best_flops() / 1e9,
               o.measure.confirm_leaders > 0 ? fmt::format(" (median of {} rounds)", o.measure.confirm_rounds) : "",
               tuner->best_config().str());
  else if (remaining > 0)
    fmt::print("no valid config found in {} trials\n", tuner->trials());
  return 0;
}

}  // namespace tessera::cli
