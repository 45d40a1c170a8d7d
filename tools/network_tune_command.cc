#include "network_tune_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "autoschedule/search_task.h"
#include "autoschedule/task_scheduler.h"
#include "autotvm/tune_tasks.h"
#include "build/build.h"
#include "build/extract_tasks.h"
#include "build/graph_tuner.h"
#include "flag_checks.h"
#include "graph/model_source.h"
#include "model_flags.h"
#include "records/log_file.h"
#include "runtime/graph_executor.h"
#include "runtime/thread_pool.h"
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

// Times the executors in interleaved rounds (a noisy neighbour slows both
// alike; each round warms its executor up first, GraphExecutor::benchmark),
// then prints each one's summary under its title.
// `short_names[s]` names side s in the ratio lines ("kernel-tuned / default").
void evaluate(std::vector<std::pair<std::string, runtime::GraphExecutor*>> sides,
              const std::vector<std::string>& short_names, int number, int repeat) {
  std::vector<runtime::BenchmarkResult> results(sides.size());
  for (auto& [title, ex] : sides)
    for (int i = 0; i < ex->num_inputs(); ++i) {
      runtime::NDArray x(ex->input_shape(i));
      x.fill_random(42 + i);
      ex->set_input(i, x);
    }
  for (int r = 0; r < repeat; ++r)
    for (size_t s = 0; s < sides.size(); ++s)
      results[s].seconds.push_back(sides[s].second->benchmark(number, 1).seconds.at(0));
  fmt::print("Evaluate inference time cost...\n");
  for (size_t s = 0; s < sides.size(); ++s)
    fmt::print("{}\n  {} (min {:.2f} ms)\n", sides[s].first, results[s].summary(), results[s].min() * 1e3);
  for (size_t s = 1; s < results.size(); ++s)
    fmt::print("{} / default: {:.3f} (minima)\n", short_names.at(s),
               results[s].min() / results[0].min());
}

struct EvaluatedBuild {
  std::string title;
  std::string short_name;  // in the ratio line, e.g. "kernel-tuned"
  const std::vector<records::Record>* records = nullptr;  // null: the default schedules
  bool winograd = true;
  bool keep_layout = false;
};

// Compiles the network once per entry and times the builds against each other.
void compile_and_evaluate(const NetworkTuneOptions& o, const graph::Graph& model, const codegen::Target& target,
                          const std::vector<EvaluatedBuild>& builds) {
  runtime::set_num_threads(target.threads);
  std::vector<std::pair<std::string, runtime::GraphExecutor>> sides;
  std::vector<std::string> short_names;
  for (const auto& [title, short_name, records, winograd, keep_layout] : builds) {
    short_names.push_back(short_name);
    fmt::print("Compile...\n");
    std::optional<records::ApplyHistoryBest> history;
    build::BuildOptions options;
    options.winograd = winograd;
    options.keep_layout = keep_layout;
    if (records) {
      history.emplace(*records);
      options.history = &*history;
      options.conv_blocks = build::graph_choices(*records);
    }
    build::BuildResult built = build::build(model, target, options);
    sides.emplace_back(title, runtime::GraphExecutor(std::move(built.artifact), o.model));
  }
  std::vector<std::pair<std::string, runtime::GraphExecutor*>> timed;
  for (auto& [title, ex] : sides) timed.emplace_back(title, &ex);
  evaluate(timed, short_names, o.eval_number, o.eval_repeat);
}

// --search auto: the auto-scheduler over every kernel, split by the task scheduler.
int run_network_tune_auto(const NetworkTuneOptions& o, const graph::Graph& model, const codegen::Target& target,
                          const std::string& log) {
  fmt::print("Extract tasks...\n");
  // Winograd is a template's algorithm: the auto-scheduler schedules the
  // direct convolutions (random schedules of the transforms are very slow).
  const std::vector<build::AutoTask> tasks =
      build::extract_auto_tasks(model, target, build::BuildOptions{.winograd = false, .keep_layout = o.keep_layout});
  for (size_t i = 0; i < tasks.size(); ++i)
    fmt::print("========== Task {} (workload key: {}) ==========\n{}: weight {} ({}), {:.1f} MFLOP\n{}\n", i,
               tasks[i].dag.workload_key(), tasks[i].name, tasks[i].weight, tasks[i].nodes,
               tasks[i].dag.flop_count() / 1e6, tasks[i].dag.print());
  fmt::print("{}: {} tasks for {} ({}); log {}\n", o.model, tasks.size(), target.str(), target.match_key(), log);
  std::vector<records::Record> earlier;
  if (std::filesystem::exists(log)) earlier = records::load_records(log, std::cerr);

  measure::LocalBuilder builder(builder_options(o.measure));
  const measure::LocalRunnerOptions run = runner_options(o.measure, target.threads, /*check=*/false);
  const auto runner = make_runner(o.measure, run);
  const auto confirm_runner = make_runner(o.measure, autotvm::confirm_runner_options(run));
  records::RecordWriter writer(log);
  autoschedule::XgbStoreCostModel cost_model(autoschedule::XgbStoreModelOptions{.seed = o.seed});
  std::vector<std::unique_ptr<autoschedule::TaskSearch>> searches;
  std::vector<autoschedule::ScheduledTask> scheduled;
  int64_t resumed = 0;
  for (const build::AutoTask& t : tasks) {
    autoschedule::SearchTask task{t.name, t.dag, target, nlohmann::json{{"nodes", t.nodes}}};
    autoschedule::SearchOptions options{.log = log,
                                        .stop = &g_stop,
                                        .seed = o.seed,
                                        .confirm_leaders = o.measure.confirm_leaders,
                                        .confirm_rounds = o.measure.confirm_rounds,
                                        .confirm_runner = confirm_runner.get()};
    searches.push_back(std::make_unique<autoschedule::TaskSearch>(task, cost_model, options, builder, *runner, writer));
    resumed += searches.back()->resume(earlier);
    scheduled.push_back({searches.back().get(), static_cast<double>(t.weight), t.dag.flop_count(), t.tag});
  }
  if (resumed) fmt::print("resuming from {}: {} schedules already measured\n", log, resumed);
  autoschedule::TaskSchedulerOptions options;
  options.strategy = o.task_scheduler == "round-robin" ? autoschedule::TaskSchedulerStrategy::RoundRobin
                                                        : autoschedule::TaskSchedulerStrategy::Gradient;
  options.total_trials = static_cast<int64_t>(o.trials) * static_cast<int64_t>(tasks.size());
  options.early_stopping = o.early_stopping;
  options.seed = o.seed;
  options.stop = &g_stop;
  fmt::print("Tuning...\n");
  std::fflush(stdout);
  g_stop = false;
  std::signal(SIGINT, on_interrupt);
  autoschedule::TaskScheduler scheduler(std::move(scheduled), options);
  scheduler.tune(std::cout);
  if (!g_stop) {
    fmt::print("Re-measuring each task's leaders...\n");
    std::fflush(stdout);
    for (auto& s : searches)
      if (!g_stop) s->confirm_leaders();
  }
  std::signal(SIGINT, SIG_DFL);
  if (g_stop) {
    fmt::print("stopped: every measured record is in {}; run the same command again to resume\n", log);
    return 130;
  }
  if (o.no_evaluate) return 0;
  const std::vector<records::Record> tuned = records::load_records(log, std::cerr);
  compile_and_evaluate(o, model, target,
                       {{"Network compiled with the default schedules (no tuning):", "default", nullptr, !o.no_winograd},
                        {"Network with its kernels auto-scheduled:", "auto-scheduled", &tuned, false, o.keep_layout}});
  return 0;
}

}  // namespace

CLI::App* add_network_tune_command(CLI::App& app, NetworkTuneOptions& o) {
  CLI::App* cmd = app.add_subcommand("tune", "tune every task of a network, then compile and time it");
  cmd->add_option("model", o.model, "zoo name (e.g. resnet-18) or .onnx file")->required();
  add_model_flags(cmd, o.batch, o.layout, o.no_winograd, o.keep_layout);
  add_target_flag(cmd, o.target, "target to tune for; must run on this host");
  cmd->add_option("--threads", o.threads, "threads the kernels run with (0: the target's, else one per core)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--search", o.search, "templates (AutoTVM) or auto (the auto-scheduler: no template)")
      ->check(CLI::IsMember({"templates", "auto"}))
      ->capture_default_str();
  cmd->add_option("--task-scheduler", o.task_scheduler, "--search auto: how trials are split over the tasks")
      ->check(CLI::IsMember({"gradient", "round-robin"}))
      ->capture_default_str();
  cmd->add_option("--tuner", o.tuner, "one of: " + fmt::format("{}", fmt::join(autotvm::tuner_names(), ", ")))
      ->capture_default_str();
  cmd->add_option("--trials", o.trials, "configs to measure per task at most")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--early-stopping", o.early_stopping, "stop a task after N trials without improvement (0: never)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--log", o.log, "tuning log (JSON lines; default MODEL.log); an existing log resumes the run");
  cmd->add_option("--time-budget", o.time_budget_min, "minutes for all tasks, split by weight x FLOPs (0: no limit)")
      ->check(minutes_or_zero)
      ->capture_default_str();
  cmd->add_flag("--no-transfer-learning", o.no_transfer_learning,
                "start each task's cost model empty instead of from the log's other records");
  cmd->add_option("--graph-tuner", o.graph_tuner,
                  "after the kernels, choose every convolution's channel blocks across the graph")
      ->check(CLI::IsMember({"dp", "pbqp"}));
  cmd->add_option("--graph-log", o.graph_log, "where the graph tuner writes its choice (default MODEL_graph_opt.log)");
  add_measure_flags(cmd, o.measure);
  cmd->add_option("--eval-number", o.eval_number, "runs per timing of the evaluation")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--eval-repeat", o.eval_repeat, "timings of the evaluation")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_flag("--no-evaluate", o.no_evaluate, "stop after tuning");
  cmd->add_option("--seed", o.seed, "random seed of the tuners")->capture_default_str();
  return cmd;
}

int run_network_tune(const NetworkTuneOptions& o) {
  const codegen::Target target = resolve_target(o.target, o.threads);
  // With --runner rpc the devices measure; this host still runs the evaluation.
  if (!o.measure.remote() || !o.no_evaluate) codegen::require_runnable_here(target);
  const std::string log = o.log.empty() ? default_log(o.model) : o.log;
  support::refuse_to_overwrite(log, o.model, "model", "--log");
  const std::string graph_log = o.graph_log.empty() ? default_log(o.model, "_graph_opt") : o.graph_log;
  if (!o.graph_tuner.empty()) {
    support::refuse_to_overwrite(graph_log, o.model, "model", "--graph-log");
    support::refuse_to_overwrite(graph_log, log, "tuning log (--log): the graph tuner's choice would replace its records",
                                 "--graph-log");
  }
  const graph::Graph model = graph::load_model(o.model, {o.batch, o.layout});
  if (o.search == "auto") return run_network_tune_auto(o, model, target, log);
  if (o.keep_layout)
    throw Error("--keep-layout needs --search auto: the templates schedule NCHW<lanes>c kernels");

  fmt::print("Extract tasks...\n");
  const graph::Graph optimized = build::optimize_for_target(model, target, {}, !o.no_winograd);
  const std::vector<build::NetworkTask> tasks = build::extract_tasks(optimized, target);
  fmt::print("{}", build::print_tasks(tasks));
  fmt::print("{}: {} tasks for {} ({}); log {}\n", o.model, tasks.size(), target.str(), target.match_key(), log);

  fmt::print("Tuning...\n");
  std::fflush(stdout);
  std::vector<autotvm::WeightedTask> weighted;
  for (const build::NetworkTask& t : tasks) weighted.push_back({&t.task, t.weight});
  autotvm::TuneTasksOptions tune;
  tune.tuner = o.tuner;
  tune.n_trial = o.trials;
  tune.early_stopping = o.early_stopping;
  tune.time_budget_min = o.time_budget_min;
  tune.log = log;
  tune.transfer_learning = !o.no_transfer_learning;
  tune.confirm_leaders = o.measure.confirm_leaders;
  tune.confirm_rounds = o.measure.confirm_rounds;
  tune.seed = o.seed;
  tune.stop = &g_stop;
  measure::LocalBuilder builder(builder_options(o.measure));
  const measure::LocalRunnerOptions run = runner_options(o.measure, target.threads, /*check=*/false);
  const auto runner = make_runner(o.measure, run);
  const auto confirm_runner = make_runner(o.measure, autotvm::confirm_runner_options(run));
  g_stop = false;
  std::signal(SIGINT, on_interrupt);
  const autotvm::TuneTasksSummary summary = autotvm::tune_tasks(
      weighted, tune, autotvm::MeasureOption{&builder, runner.get(), confirm_runner.get()}, std::cout, std::cerr);
  std::signal(SIGINT, SIG_DFL);
  fmt::print("tuned {} tasks ({} already tuned) with {} trials in {:.0f} s\n", summary.tuned, summary.already_done,
             summary.trials, summary.seconds);
  if (summary.stopped) {
    fmt::print("stopped: every measured record is in {}; run the same command again to resume\n", log);
    return 130;
  }
  const std::vector<records::Record> kernel_records = records::load_records(log, std::cerr);
  std::vector<records::Record> graph_records;
  if (!o.graph_tuner.empty()) {
    build::GraphTunerOptions graph_options;
    graph_options.solver = o.graph_tuner;
    graph_options.builder = &builder;
    graph_options.runner = confirm_runner.get();  // longer runs: transforms are short
    graph_options.winograd = !o.no_winograd;
    const build::GraphTunerResult chosen = build::tune_graph(model, target, kernel_records, graph_options, std::cout);
    records::write_records(graph_log, chosen.records);
    fmt::print("INFO Writing optimal schedules to {} successfully.\n", graph_log);
    int changed = 0;
    for (const auto& [name, blocks] : chosen.conv_blocks)
      changed += blocks.oc_bn != target.vector_lanes() || blocks.ic_bn != target.vector_lanes();
    fmt::print(
        "graph tuner ({}): {} convolutions, {} edges; estimated {:.3f} ms with the default blocks, "
        "{:.3f} ms as chosen ({} convolutions not at {} x {})\n",
        chosen.solver, chosen.convolutions, chosen.edges, chosen.default_seconds * 1e3, chosen.chosen_seconds * 1e3,
        changed, target.vector_lanes(), target.vector_lanes());
    graph_records = chosen.records;
  }
  if (o.no_evaluate) return 0;

  const bool winograd = !o.no_winograd;
  std::vector<EvaluatedBuild> builds = {
      {"Network compiled with the default schedules (no tuning):", "default", nullptr, winograd},
      {"Network with its kernels tuned:", "kernel-tuned", &kernel_records, winograd}};
  if (!graph_records.empty())
    builds.push_back({"Network tuned at the graph level:", "graph-tuned", &graph_records, winograd});
  compile_and_evaluate(o, model, target, builds);
  return 0;
}

}  // namespace tessera::cli
