#include "network_tune_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>

#include "autotvm/tune_tasks.h"
#include "flag_checks.h"
#include "graph/model_source.h"
#include "model_flags.h"
#include "target_flags.h"
#include "support/write_file.h"
#include "tessera/error.h"

namespace tessera::cli {
namespace {

std::atomic<bool> g_stop{false};

// The first Ctrl-C asks the tuner to stop after the batch in flight (whose
// results are dropped); the second one ends the process at once.
void on_interrupt(int) {
  if (g_stop.exchange(true)) {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

std::string default_log(const std::string& model, const std::string& suffix = "") {
  return std::filesystem::path(model).stem().string() + suffix + ".log";
}

}  // namespace

CLI::App* add_network_tune_command(CLI::App& app, NetworkTuneOptions& o) {
  CLI::App* cmd = app.add_subcommand("tune", "tune every task of a network, then compile and time it");
  cmd->add_option("model", o.model, "zoo name (e.g. resnet-18) or .onnx file")->required();
  add_model_flags(cmd, o.model_flags, o.no_winograd, o.tune.keep_layout);
  add_target_flag(cmd, o.target, "target to tune for; must run on this host");
  cmd->add_option("--threads", o.threads, "threads the kernels run with (0: the target's, else one per core)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--search", o.tune.search, "templates (AutoTVM) or auto (the auto-scheduler: no template)")
      ->check(CLI::IsMember({"templates", "auto"}))
      ->capture_default_str();
  cmd->add_option("--task-scheduler", o.tune.task_scheduler, "--search auto: how trials are split over the tasks")
      ->check(CLI::IsMember({"gradient", "round-robin"}))
      ->capture_default_str();
  cmd->add_option("--tuner", o.tune.tuner, "one of: " + fmt::format("{}", fmt::join(autotvm::tuner_names(), ", ")))
      ->capture_default_str();
  cmd->add_option("--trials", o.tune.trials, "configs to measure per task at most")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--early-stopping", o.tune.early_stopping, "stop a task after N trials without improvement (0: never)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--log", o.tune.log, "tuning log (JSON lines; default MODEL.log); an existing log resumes the run");
  cmd->add_option("--dtype", o.tune.dtype,
                  "float16 (GPU targets): tune the kernels of the network in half storage")
      ->check(CLI::IsMember({"float32", "float16"}))
      ->capture_default_str();
  cmd->add_option("--convolutions", o.tune.convolutions,
                  "implicit-gemm, winograd (search templates), direct or auto: as compile's")
      ->check(CLI::IsMember({"auto", "direct", "implicit-gemm", "winograd"}))
      ->capture_default_str();
  cmd->add_option("--time-budget", o.tune.time_budget_min, "minutes for all tasks, split by weight x FLOPs (0: no limit)")
      ->check(minutes_or_zero)
      ->capture_default_str();
  cmd->add_flag("--no-transfer-learning", o.no_transfer_learning,
                "start each task's cost model empty instead of from the log's other records");
  cmd->add_option("--graph-tuner", o.tune.graph_tuner,
                  "after the kernels, choose every convolution's channel blocks across the graph")
      ->check(CLI::IsMember({"dp", "pbqp"}));
  cmd->add_option("--graph-log", o.tune.graph_log, "where the graph tuner writes its choice (default MODEL_graph_opt.log)");
  add_measure_flags(cmd, o.measure);
  cmd->add_option("--eval-number", o.tune.eval_number, "runs per timing of the evaluation")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--eval-repeat", o.tune.eval_repeat, "timings of the evaluation")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_flag("--no-evaluate", o.no_evaluate, "stop after tuning");
  cmd->add_option("--seed", o.tune.seed, "random seed of the tuners")->capture_default_str();
  add_quantize_flags(cmd, o.quantization);
  return cmd;
}

int run_network_tune(const NetworkTuneOptions& o) {
  const target::Target target = resolve_target(o.target, o.threads);
  driver::TuneOptions tune = o.tune;
  tune.log = tune.log.empty() ? default_log(o.model) : tune.log;
  support::refuse_to_overwrite(tune.log, o.model, "model", "--log");
  if (!tune.graph_tuner.empty()) {
    tune.graph_log = tune.graph_log.empty() ? default_log(o.model, "_graph_opt") : tune.graph_log;
    support::refuse_to_overwrite(tune.graph_log, o.model, "model", "--graph-log");
    support::refuse_to_overwrite(tune.graph_log, tune.log,
                                 "tuning log (--log): the graph tuner's choice would replace its records",
                                 "--graph-log");
  }
  if (tune.search == "auto" && !tune.graph_tuner.empty())
    throw Error("--graph-tuner needs --search templates: it chooses the templates' channel blocks");
  if (tune.search != "auto" && tune.keep_layout)
    throw Error("--keep-layout needs --search auto: the templates schedule NCHW<lanes>c kernels");
  tune.quantize = o.quantization.quantize;
  tune.calibrate = o.quantization.calibrate;
  tune.quantization = o.quantization.options();
  tune.transfer_learning = !o.no_transfer_learning;
  tune.winograd = !o.no_winograd;
  tune.evaluate = !o.no_evaluate;
  tune.confirm_leaders = o.measure.confirm_leaders;
  tune.confirm_rounds = o.measure.confirm_rounds;
  measure::LocalBuilder builder(builder_options(o.measure));
  const measure::LocalRunnerOptions run = runner_options(o.measure, target.threads, /*check=*/false);
  const auto runner = make_runner(o.measure, run);
  const auto confirm_runner = make_runner(o.measure, autotvm::confirm_runner_options(run));
  tune.builder = &builder;
  tune.runner = runner.get();
  tune.confirm_runner = confirm_runner.get();
  tune.stop = &g_stop;
  if (target.accelerator == "vta") {
    // VTA programs are built here (driver/tune_vta.h) and simulated in this
    // process, or by the servers of --key (started with --device vta-sim).
    tune.builder = nullptr;
    if (!o.measure.remote()) tune.runner = tune.confirm_runner = nullptr;
  }
  // With --runner rpc the devices measure; this host still runs the evaluation.
  if (!o.measure.remote() || tune.evaluate) target::require_runnable_here(target);
  const graph::ModelOptions model_options = o.model_flags.options();
  if (model_options.varying && !tune.graph_tuner.empty())
    throw Error("--graph-tuner chooses the layouts of one graph: tune a range of sizes without it");
  fmt::print("{}: tuning for {} ({})\n", o.model, target.str(), target.match_key());
  std::fflush(stdout);
  g_stop = false;
  std::signal(SIGINT, on_interrupt);
  driver::TuneResult result;
  if (const auto& varying = model_options.varying) {
    // A range: each bucket's tasks in turn, into the one log (the budget
    // shared evenly); `tessera compile` with the same range and --records
    // then builds every bucket tuned.
    tune.time_budget_min /= static_cast<double>(varying->buckets.size());
    tune.evaluate = false;
    for (int64_t size : varying->buckets) {
      fmt::print("{} = {} (of {}):\n", varying->name, size, varying->to_string());
      std::fflush(stdout);
      result = driver::tune_network(graph::load_model(o.model, model_options.at_size(size)), target, tune, std::cout,
                                    std::cerr);
      if (result.stopped) break;
    }
    if (!result.stopped)
      fmt::print("every bucket tuned into {}; compile with the same range and --records {}\n", tune.log, tune.log);
  } else {
    result = driver::tune_network(graph::load_model(o.model, model_options), target, tune, std::cout, std::cerr);
  }
  std::signal(SIGINT, SIG_DFL);
  if (result.stopped) {
    fmt::print("stopped: every measured record is in {}; run the same command again to resume\n", tune.log);
    return 130;
  }
  return 0;
}

}  // namespace tessera::cli
