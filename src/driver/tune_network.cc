#include "driver/tune_network.h"
#include "driver/tune_vta.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numeric>
#include <optional>
#include <set>

#include "autoschedule/search_task.h"
#include "autoschedule/task_scheduler.h"
#include "autotvm/tune_tasks.h"
#include "driver/compile.h"
#include "driver/extract_tasks.h"
#include "driver/graph_tuner.h"
#include "records/log_file.h"
#include "runtime/gpu_graph_executor.h"
#include "runtime/graph_executor.h"
#include "runtime/thread_pool.h"
#include "support/write_file.h"
#include "tessera/error.h"

namespace tessera::driver {
namespace {

// The builder and runners a tuning measures with: the caller's, else local ones.
struct Measurement {
  Measurement(const TuneOptions& o, const target::Target& target) {
    builder = o.builder;
    runner = o.runner;
    confirm_runner = o.confirm_runner;
    if (!builder) builder = &own_builder.emplace();
    measure::LocalRunnerOptions run = autotvm::search_runner_options(target.threads);
    // A GPU candidate's output is checked against the host's (its task has
    // no operator reference): a wrong kernel, fast, must not become the record.
    run.check_correctness = run.check_gpu_against_host = target.is_gpu();
    if (!runner) runner = &own_runner.emplace(run);
    if (!confirm_runner) confirm_runner = &own_confirm_runner.emplace(autotvm::confirm_runner_options(run));
  }
  measure::Builder* builder;
  measure::Runner* runner;
  measure::Runner* confirm_runner;
  std::optional<measure::LocalBuilder> own_builder;
  std::optional<measure::LocalRunner> own_runner, own_confirm_runner;
};

bool stopped(const TuneOptions& o) { return o.stop && o.stop->load(); }

// The log's workload keys and those of `known`, for only_missing.
std::set<std::string> recorded_keys(const TuneOptions& o, std::ostream& warnings) {
  std::set<std::string> keys;
  if (!o.only_missing) return keys;
  std::vector<std::string> logs = o.known;
  logs.push_back(o.log);
  for (const auto& log : logs)
    if (std::filesystem::exists(log))
      for (const auto& r : records::load_records(log, warnings)) keys.insert(r.workload_key);
  return keys;
}

struct EvaluatedBuild {
  std::string title;       // "Network with its kernels tuned:"
  std::string short_name;  // in the ratio line, e.g. "kernel-tuned"
  std::vector<std::string> records;  // none (and no loaded ones): the default schedules
  std::vector<records::Record> loaded;  // records read already (the tuning's log)
  bool winograd = true;
  bool keep_layout = false;
};

// Compiles the network once per entry and times the builds in interleaved
// rounds (a noisy neighbour slows all alike; each round warms its executor
// up first), then prints each one's summary and its ratio to the first.
template <typename Executor>
void evaluate_on(const TuneOptions& o, const graph::Graph& model, const target::Target& target,
                 const std::vector<EvaluatedBuild>& builds, std::ostream& out, std::ostream& warnings) {
  std::vector<Executor> executors;
  for (const EvaluatedBuild& b : builds) {
    out << "Compile...\n" << std::flush;
    CompileOptions options{
        .records = b.records, .loaded_records = b.loaded, .winograd = b.winograd, .keep_layout = b.keep_layout};
    options.warnings = &warnings;
    options.shipped_records = false;  // "default" means the hand-written schedules
    options.dtype = o.dtype;
    options.convolutions = o.convolutions;
    executors.emplace_back(compile(model, target, options).artifact, "network");
  }
  for (Executor& ex : executors) ex.set_random_inputs();
  std::vector<runtime::BenchmarkResult> results(executors.size());
  for (int r = 0; r < o.eval_repeat; ++r)
    for (size_t s = 0; s < executors.size(); ++s)
      results[s].seconds.push_back(executors[s].benchmark(o.eval_number, 1).seconds.at(0));
  out << "Evaluate inference time cost...\n";
  for (size_t s = 0; s < builds.size(); ++s)
    out << fmt::format("{}\n  {} (min {:.2f} ms)\n", builds[s].title, results[s].summary(), results[s].min() * 1e3);
  for (size_t s = 1; s < results.size(); ++s)
    out << fmt::format("{} / default: {:.3f} (minima)\n", builds[s].short_name, results[s].min() / results[0].min());
  out << std::flush;
}

// On the host's threads, or on the GPU target's device (timed by its clock).
void evaluate(const TuneOptions& o, const graph::Graph& model, const target::Target& target,
              const std::vector<EvaluatedBuild>& builds, std::ostream& out, std::ostream& warnings) {
  if (target.is_gpu()) return evaluate_on<runtime::GpuGraphExecutor>(o, model, target, builds, out, warnings);
  runtime::set_num_threads(target.threads);
  evaluate_on<runtime::GraphExecutor>(o, model, target, builds, out, warnings);
}

// --search templates: AutoTVM over the templated kernels, then the graph tuner.
TuneResult tune_templates(const graph::Graph& model, const target::Target& target, const TuneOptions& o,
                          Measurement& m, std::ostream& out, std::ostream& warnings) {
  if (o.keep_layout) throw Error("keep_layout needs the auto-scheduler: the templates schedule NCHW<lanes>c kernels");
  build::BuildOptions kernels{.winograd = o.winograd};
  kernels.half_storage = half_storage_of(o.dtype);
  if (kernels.half_storage) build::require_half_storage_target(target);
  out << "Extract tasks...\n";
  apply_convolutions(o.convolutions, target, kernels);
  const graph::Graph optimized = build::optimize_for_target(model, target, {}, kernels.winograd, false,
                                                            build::implicit_gemm_of(kernels, target),
                                                            kernels.gpu_winograd);
  const std::vector<NetworkTask> tasks = extract_tasks(optimized, target, kernels.half_storage);
  const std::set<std::string> recorded = recorded_keys(o, warnings);
  std::vector<autotvm::WeightedTask> weighted;
  for (const NetworkTask& t : tasks)
    if (!recorded.count(t.task.workload_key())) weighted.push_back({&t.task, t.weight});
  if (o.only_missing) {
    out << fmt::format("{} tasks, {} to tune; log {}\n", tasks.size(), weighted.size(), o.log);
  } else {
    out << print_tasks(tasks);
    out << fmt::format("{} tasks for {} ({}); log {}\n", tasks.size(), target.str(), target.match_key(), o.log);
  }
  TuneResult result;
  result.tasks = static_cast<int>(tasks.size());
  if (weighted.empty()) return result;

  out << "Tuning...\n" << std::flush;
  autotvm::TuneTasksOptions tune;
  tune.tuner = o.tuner;
  tune.n_trial = o.trials;
  tune.early_stopping = o.early_stopping;
  tune.time_budget_min = o.time_budget_min;
  tune.log = o.log;
  tune.transfer_learning = o.transfer_learning;
  tune.confirm_leaders = o.confirm_leaders;
  tune.confirm_rounds = o.confirm_rounds;
  tune.seed = o.seed;
  tune.stop = o.stop;
  const autotvm::TuneTasksSummary summary = autotvm::tune_tasks(
      weighted, tune, autotvm::MeasureOption{m.builder, m.runner, m.confirm_runner}, out, warnings);
  result.tuned = summary.tuned;
  result.already_done = summary.already_done;
  result.trials = summary.trials;
  result.seconds = summary.seconds;
  result.stopped = summary.stopped;
  out << fmt::format("tuned {} tasks ({} already tuned) with {} trials in {:.0f} s\n", summary.tuned,
                     summary.already_done, summary.trials, summary.seconds);
  if (result.stopped) return result;

  if (o.graph_tuner.empty() && !o.evaluate) return result;
  // The log again, its damaged lines already reported by the tuner's read.
  std::ostream already_reported(nullptr);
  const std::vector<records::Record> kernel_records = records::load_records(o.log, already_reported);
  if (!o.graph_tuner.empty()) {
    GraphTunerOptions graph_options;
    graph_options.solver = o.graph_tuner;
    graph_options.builder = m.builder;
    graph_options.runner = m.confirm_runner;  // longer runs: transforms are short
    graph_options.winograd = o.winograd;
    const GraphTunerResult chosen = tune_graph(model, target, kernel_records, graph_options, out);
    records::write_records(o.graph_log, chosen.records);
    out << fmt::format("INFO Writing optimal schedules to {} successfully.\n", o.graph_log);
    int changed = 0;
    for (const auto& [name, blocks] : chosen.conv_blocks)
      changed += blocks.oc_bn != target.vector_lanes() || blocks.ic_bn != target.vector_lanes();
    out << fmt::format(
        "graph tuner ({}): {} convolutions, {} edges; estimated {:.3f} ms with the default blocks, "
        "{:.3f} ms as chosen ({} convolutions not at {} x {})\n",
        chosen.solver, chosen.convolutions, chosen.edges, chosen.default_seconds * 1e3, chosen.chosen_seconds * 1e3,
        changed, target.vector_lanes(), target.vector_lanes());
  }
  if (!o.evaluate) return result;
  std::vector<EvaluatedBuild> builds = {
      {"Network compiled with the default schedules (no tuning):", "default", {}, {}, o.winograd},
      {"Network with its kernels tuned:", "kernel-tuned", {}, kernel_records, o.winograd}};
  if (!o.graph_tuner.empty())
    builds.push_back({"Network tuned at the graph level:", "graph-tuned", {o.graph_log}, {}, o.winograd});
  evaluate(o, model, target, builds, out, warnings);
  return result;
}

// --search auto: the auto-scheduler over every kernel, split by the task scheduler.
TuneResult tune_auto(const graph::Graph& model, const target::Target& target, const TuneOptions& o, Measurement& m,
                     std::ostream& out, std::ostream& warnings) {
  if (!o.graph_tuner.empty()) throw Error("the graph tuner chooses the templates' channel blocks: it needs search templates");
  out << "Extract tasks...\n";
  // Winograd is a template's algorithm: the auto-scheduler schedules the
  // direct convolutions (random schedules of the transforms are very slow).
  if (o.convolutions == "winograd")
    throw Error("--convolutions winograd is a template's algorithm: tune it with --search templates");
  build::BuildOptions kernels{.winograd = false, .keep_layout = o.keep_layout};
  kernels.half_storage = half_storage_of(o.dtype);
  apply_convolutions(o.convolutions, target, kernels);
  const std::vector<AutoTask> tasks = extract_auto_tasks(model, target, kernels);
  for (size_t i = 0; i < tasks.size(); ++i)
    out << fmt::format("========== Task {} (workload key: {}) ==========\n{}: weight {} ({}), {:.1f} MFLOP\n{}\n", i,
                       tasks[i].dag.workload_key(), tasks[i].name, tasks[i].weight, tasks[i].nodes,
                       tasks[i].dag.flop_count() / 1e6, tasks[i].dag.print());
  out << fmt::format("{} tasks for {} ({}); log {}\n", tasks.size(), target.str(), target.match_key(), o.log);
  std::vector<records::Record> earlier;
  if (std::filesystem::exists(o.log)) earlier = records::load_records(o.log, warnings);

  records::RecordWriter writer(o.log);
  autoschedule::XgbStoreCostModel cost_model(autoschedule::XgbStoreModelOptions{.seed = o.seed});
  std::vector<std::unique_ptr<autoschedule::TaskSearch>> searches;
  std::vector<autoschedule::ScheduledTask> scheduled;
  int64_t resumed = 0;
  for (const AutoTask& t : tasks) {
    autoschedule::SearchTask task{t.name, t.dag, target, nlohmann::json{{"nodes", t.nodes}}};
    autoschedule::SearchOptions options{.log = o.log,
                                        .stop = o.stop,
                                        .seed = o.seed,
                                        .confirm_leaders = o.confirm_leaders,
                                        .confirm_rounds = o.confirm_rounds,
                                        .confirm_runner = m.confirm_runner};
    searches.push_back(
        std::make_unique<autoschedule::TaskSearch>(task, cost_model, options, *m.builder, *m.runner, writer));
    resumed += searches.back()->resume(earlier);
    scheduled.push_back({searches.back().get(), static_cast<double>(t.weight), t.dag.flop_count(), t.tag});
  }
  if (resumed) out << fmt::format("resuming from {}: {} schedules already measured\n", o.log, resumed);
  autoschedule::TaskSchedulerOptions options;
  options.strategy = o.task_scheduler == "round-robin" ? autoschedule::TaskSchedulerStrategy::RoundRobin
                                                        : autoschedule::TaskSchedulerStrategy::Gradient;
  options.total_trials = static_cast<int64_t>(o.trials) * static_cast<int64_t>(tasks.size());
  // A round holds no more than a task's share: --trials 8 gives every task
  // its 8, where rounds of 16 would spend them all on the first tasks.
  options.trials_per_round = std::clamp(o.trials, 1, options.trials_per_round);
  options.early_stopping = o.early_stopping;
  options.seed = o.seed;
  // With a time budget the leaders' re-measurement is part of it: the search
  // stops at (1 - kConfirmShare) of the budget, and the confirmation ends with it.
  constexpr double kConfirmShare = 0.15;
  options.time_budget_min = o.time_budget_min * (o.confirm_leaders > 0 ? 1 - kConfirmShare : 1);
  options.stop = o.stop;
  if (options.time_budget_min != o.time_budget_min)
    out << fmt::format("time budget {:g} min: {:g} for the search, the rest for re-measuring its leaders\n",
                       o.time_budget_min, options.time_budget_min);
  out << "Tuning...\n" << std::flush;
  const auto start = std::chrono::steady_clock::now();
  autoschedule::TaskScheduler scheduler(std::move(scheduled), options);
  scheduler.tune(out);
  TuneResult result;
  autoschedule::TaskSearch::Phases phases;
  for (const auto& search : searches) {
    const int64_t measured = search->trials() - search->resumed();  // this call's
    result.trials += measured;
    result.tuned += measured > 0 ? 1 : 0;
    phases.choosing += search->phases().choosing;
    phases.building += search->phases().building;
    phases.measuring += search->phases().measuring;
  }
  out << fmt::format("{} trials: {:.1f} s choosing candidates, {:.1f} s building, {:.1f} s measuring\n", result.trials,
                     phases.choosing, phases.building, phases.measuring);
  if (!stopped(o)) {
    out << "Re-measuring each task's leaders...\n" << std::flush;
    // The tasks that weigh most in the network's latency first, so that a
    // budget that ends here leaves the small ones with their search's best.
    std::vector<size_t> order(searches.size());
    std::iota(order.begin(), order.end(), size_t{0});
    auto share = [&](size_t i) {
      const double cost = searches[i]->best_cost();
      return std::isfinite(cost) ? cost * static_cast<double>(tasks[i].weight) : 0.0;
    };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return share(a) > share(b); });
    size_t confirmed = 0;
    for (size_t i : order) {
      if (stopped(o)) break;
      const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (o.time_budget_min > 0 && spent >= o.time_budget_min * 60) {
        out << fmt::format("time budget spent: the leaders of {} of {} tasks re-measured\n", confirmed,
                           searches.size());
        break;
      }
      searches[i]->confirm_leaders();
      ++confirmed;
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.tasks = static_cast<int>(tasks.size());
  result.stopped = stopped(o);
  if (result.stopped || !o.evaluate) return result;
  std::ostream already_reported(nullptr);  // the log's damaged lines: reported when it was resumed
  evaluate(o, model, target,
           {{"Network compiled with the default schedules (no tuning):", "default", {}, {}, o.winograd},
            {"Network with its kernels auto-scheduled:", "auto-scheduled", {}, records::load_records(o.log, already_reported),
             false, o.keep_layout}},
           out, warnings);
  return result;
}

}  // namespace

TuneResult tune_network(const graph::Graph& model, const target::Target& target, const TuneOptions& o,
                        std::ostream& out, std::ostream& warnings) {
  if (o.log.empty()) throw Error("tune_network: a log file is required (it is the tuning's state)");
  // The CLI's flag checks, for every caller (Python and C++ pass numbers straight through).
  if (o.trials < 1) throw Error("tune_network: trials must be at least 1, got " + std::to_string(o.trials));
  if (o.early_stopping < 0)
    throw Error("tune_network: early_stopping must be 0 (never) or more, got " + std::to_string(o.early_stopping));
  if (!(o.time_budget_min >= 0) || !std::isfinite(o.time_budget_min))
    throw Error(fmt::format("tune_network: time_budget_min must be finite minutes, 0 for no limit, got {}",
                            o.time_budget_min));
  if (o.eval_number < 1 || o.eval_repeat < 1) throw Error("tune_network: eval_number and eval_repeat must be at least 1");
  if (o.search != "templates" && o.search != "auto")
    throw Error("tune_network: search must be templates or auto, got " + o.search);
  if (!o.graph_tuner.empty() && o.graph_log.empty())
    throw Error("tune_network: the graph tuner needs a graph_log to write its choice to");
  if (!o.graph_tuner.empty() && target.is_gpu())
    throw Error("tune_network: the graph tuner chooses CPU channel blocks; '" + target.str() +
                "' computes in NCHW (tune without it)");
  if (!o.graph_tuner.empty())
    support::refuse_to_overwrite(o.graph_log, o.log, "tuning log: the graph tuner's choice would replace its records",
                                 "graph log");
  if (target.accelerator == "vta") return tune_vta(model, target, o, out, warnings);
  // Local runners and the evaluation run kernels here; remote runners measure on their devices.
  if (!o.runner || o.evaluate) target::require_runnable_here(target);
  Measurement m(o, target);
  if (!o.quantize.empty()) {
    const graph::Graph quantized = quantize_model(model, target, o.quantize, o.calibrate, o.quantization, warnings);
    TuneOptions as_compiled = o;
    as_compiled.winograd = false;  // as compile --quantize builds it: the float convolutions direct
    return o.search == "auto" ? tune_auto(quantized, target, as_compiled, m, out, warnings)
                              : tune_templates(quantized, target, as_compiled, m, out, warnings);
  }
  return o.search == "auto" ? tune_auto(model, target, o, m, out, warnings)
                            : tune_templates(model, target, o, m, out, warnings);
}

}  // namespace tessera::driver
