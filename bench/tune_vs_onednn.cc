// tune_vs_onednn: AutoTVM-tuned Tessera against oneDNN on ResNet-18's layers.
// For each layer and thread count: tune with the XGB tuner (resuming from the
// log of an earlier run), then time the best config and oneDNN interleaved in
// this process. Optionally, on some layers, compare the XGB tuner's best after
// N trials with the random tuner's best after M (logs PREFIX.versus.LAYER.*,
// resumed by a rerun), the XGB tuner optionally warm-started from another
// log's records of the other layers.
//
//   tune_vs_onednn [--threads 1,2] [--layers all|NAME,...] [--trials 1000] [--early-stopping 400]
//                  [--log-prefix tune_resnet18] [--tuner xgb]
//                  [--versus-random NAME,...] [--xgb-trials 200] [--random-trials 1000]
//                  [--versus-history LOG] [--no-winograd] [--target TARGET | --isa avx2|avx512]
//
// The 3x3 stride-1 layers are tuned as a network build runs them, by Winograd
// F(4x4, 3x3) (template conv2d_NCHWc_winograd.x86); --no-winograd tunes them
// as direct convolutions. oneDNN computes them directly.
//
// Records carry the target with its thread count ("... -threads=2"), so one
// log may hold runs for several ISAs and thread counts; each reads only its own.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "autotvm/callback.h"
#include "autotvm/history.h"
#include "autotvm/task.h"
#include "autotvm/tuner.h"
#include "bench_target.h"
#include "interleaved_timer.h"
#include "measure/builder.h"
#include "measure/runner.h"
#include "onednn.h"
#include "onednn_workload.h"
#include "records/apply_history_best.h"
#include "records/log_file.h"
#include "resnet18_layers.h"
#include "runtime/thread_pool.h"
#include "tessera_kernel.h"

namespace tessera::bench {

struct Options {
  std::vector<int> threads{1, 2};
  std::vector<std::string> layers{"all"};
  int trials = 1000;
  int early_stopping = 400;
  std::string log_prefix = "tune_resnet18";
  std::string tuner = "xgb";
  std::vector<std::string> versus_random;
  bool versus_random_only = false;  // skip the main table
  int xgb_trials = 200, random_trials = 1000;
  std::string versus_history;  // a log of other tasks for the xgb tuner's transfer learning
  int rounds = 5, min_repeat_ms = 100;
  bool winograd = true;
  TargetChoice target;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Records of tasks other than `task`: what transfer learning may see.
std::vector<records::Record> other_tasks_records(const autotvm::Task& task, const std::string& log) {
  std::vector<records::Record> others;
  if (log.empty()) return others;
  for (records::Record& r : records::load_records(log, std::cerr))
    if (r.workload_key != task.workload_key()) others.push_back(std::move(r));
  return others;
}

// The target with the thread count the kernels run with, which every record carries.
target::Target with_threads(target::Target target, int threads) {
  target.threads = threads;
  return target;
}

// Tunes a task into `log`, resuming it, with its target's thread count; with
// `history`, the tuner first learns from the other tasks' records there (the
// seed's use_transfer_learning).
void tune(const autotvm::Task& task, const std::string& tuner_name, int trials, int early_stopping,
          const std::string& log, const std::string& prefix, const std::string& history = "") {
  auto tuner = autotvm::make_tuner(tuner_name, task);
  if (!history.empty())
    autotvm::load_history(*tuner, task, other_tasks_records(task, history), /*other_tasks=*/true, std::cerr);
  int64_t done = 0;
  if (std::filesystem::exists(log))
    done = autotvm::load_history(*tuner, task, records::load_records(log, std::cerr), false, std::cerr);
  const int remaining = static_cast<int>(std::max<int64_t>(0, trials - done));
  if (remaining == 0) return;
  measure::LocalBuilder builder;
  measure::LocalRunnerOptions run;
  run.number = 2;
  run.repeat = 3;
  run.min_repeat_ms = 20;
  run.check_correctness = true;
  run.num_threads = task.target.threads;
  measure::LocalRunner runner(run, task.workload.reference);
  measure::LocalRunner confirm_runner(autotvm::confirm_runner_options(run));
  tuner->tune(autotvm::TuneOptions{.n_trial = remaining, .early_stopping = early_stopping},
              autotvm::MeasureOption{&builder, &runner, &confirm_runner},
              {autotvm::progress_bar(remaining, prefix, std::cout), autotvm::log_to_file(log)});
}

schedule::Trace best_trace(const autotvm::Task& task, const std::string& log) {
  auto history = records::ApplyHistoryBest::from_file(log, std::cerr);
  return autotvm::dispatch(task, history, std::cerr).trace;
}

int run(const Options& o) {
  const std::vector<Layer> layers = o.versus_random_only ? std::vector<Layer>{} : select_layers(o.layers, o.winograd);
  for (int t : o.threads)
    if (t < 1) throw Error(fmt::format("--threads: {} is not a positive thread count", t));
  const target::Target chosen = choose_target(o.target);
  fmt::print("Tessera (AutoTVM, {} tuner) vs {}, on {} with {}-bit vectors ({})\n", o.tuner, baseline::version(),
             chosen.cpu, chosen.vector_bits, chosen.isa);
  const baseline::InterleavedOptions timing{.rounds = o.rounds, .min_repeat_ms = o.min_repeat_ms};
  std::map<int, std::vector<double>> ratios;
  std::set<std::string> onednn_kernels;
  std::vector<std::string> rows;
  for (int threads : o.threads) {
    const target::Target target = with_threads(chosen, threads);
    const std::string log = fmt::format("{}.t{}.log", o.log_prefix, threads);
    for (size_t i = 0; i < layers.size(); ++i) {
      const Layer& layer = layers[i];
      autotvm::Task task = autotvm::create_task(layer.op, layer.args, target);
      const std::string prefix = fmt::format("[Task {:2}/{:2}] ", i + 1, layers.size());
      auto start = std::chrono::steady_clock::now();
      tune(task, o.tuner, o.trials, o.early_stopping, log, prefix);
      const double tuning_seconds = seconds_since(start);

      runtime::set_num_threads(threads);
      baseline::set_threads(threads);
      baseline::TesseraKernel kernel(task.workload, best_trace(task, log), target);
      baseline::CheckResult check = kernel.check();
      baseline::OneDnnLayer onednn = baseline::make_onednn_layer(layer.baseline_op(), layer.args);
      onednn_kernels.insert(onednn.implementation());
      auto [mine, theirs] = baseline::time_interleaved([&] { kernel.run(); }, [&] { onednn.run(); }, timing);
      // The convolution's own count for both sides (a Winograd DAG counts others).
      const double g_mine = baseline::gflops(onednn.flop_count(), mine.min_cost());
      const double g_theirs = baseline::gflops(onednn.flop_count(), theirs.min_cost());
      if (check.correct) ratios[threads].push_back(g_mine / g_theirs);
      rows.push_back(fmt::format("{:<20} {:<22} {:>7} {:>14.1f} {:>14.1f} {:>6.2f} {:>10.0f}  {}{}", layer.name,
                                 describe(layer), threads, g_mine, g_theirs, g_mine / g_theirs, tuning_seconds,
                                 onednn.implementation(), check.correct ? "" : "  <- WRONG"));
      std::cout << rows.back() << std::endl;
    }
  }
  const std::string header =
      fmt::format("{:<20} {:<22} {:>7} {:>14} {:>14} {:>6} {:>10}  {}", "layer", "shape", "threads", "tessera GFLOPS",
                  "onednn GFLOPS", "ratio", "tuning s", "onednn kernel");
  if (!rows.empty()) {
    fmt::print("\n{}\n{}\n", header, std::string(header.size(), '-'));
    for (const auto& r : rows) fmt::print("{}\n", r);
  }

  std::vector<std::string> versus;
  for (const std::string& name : o.versus_random) {
    const Layer layer = select_layers({name}, o.winograd)[0];
    autotvm::Task task = autotvm::create_task(layer.op, layer.args, with_threads(chosen, 1));
    // Logs named by layer and budget, so a rerun resumes (or just re-times).
    const std::string base = fmt::format("{}.versus.{}", o.log_prefix, name);
    const std::string xgb_log =
        fmt::format("{}.xgb{}{}.log", base, o.xgb_trials, o.versus_history.empty() ? "" : "-tl");
    const std::string random_log = fmt::format("{}.random{}.log", base, o.random_trials);
    tune(task, "xgb", o.xgb_trials, 0, xgb_log, "[xgb]    ", o.versus_history);
    tune(task, "random", o.random_trials, 0, random_log, "[random] ");
    // The two bests (as dispatch picks them) timed again side by side, as the
    // tuners measured them minutes apart; and the random best against itself,
    // which shows how far apart two timings of one kernel land.
    runtime::set_num_threads(1);
    baseline::TesseraKernel xk(task.workload, best_trace(task, xgb_log), task.target);
    const schedule::Trace random_best = best_trace(task, random_log);
    baseline::TesseraKernel rk(task.workload, random_best, task.target);
    baseline::TesseraKernel rk2(task.workload, random_best, task.target);
    auto [xt, rt] = baseline::time_interleaved([&] { xk.run(); }, [&] { rk.run(); }, timing);
    auto [at, bt] = baseline::time_interleaved([&] { rk.run(); }, [&] { rk2.run(); }, timing);
    const double gx = baseline::gflops(xk.flop_count(), xt.min_cost());
    const double gr = baseline::gflops(rk.flop_count(), rt.min_cost());
    versus.push_back(
        fmt::format("{}: xgb{} best after {} trials {:.1f} GFLOPS, random best after {} trials {:.1f} GFLOPS; "
                    "xgb/random {:.3f} (random/random {:.3f})",
                    name, o.versus_history.empty() ? "" : " (transfer learning)", o.xgb_trials, gx, o.random_trials, gr,
                    gx / gr, at.min_cost() / bt.min_cost()));
    std::cout << versus.back() << std::endl;
  }
  fmt::print("\n");
  for (const auto& line : versus) fmt::print("{}\n", line);
  print_isas(chosen, onednn_kernels);
  for (int threads : o.threads) {
    if (ratios[threads].empty()) continue;
    double log_sum = 0;
    for (double x : ratios[threads]) log_sum += std::log(x);
    fmt::print("geomean tessera/onednn threads={}: {:.2f}\n", threads, std::exp(log_sum / ratios[threads].size()));
  }
  return 0;
}

}  // namespace tessera::bench

int main(int argc, char** argv) {
  using namespace tessera;
  bench::Options o;
  CLI::App app{"AutoTVM-tuned Tessera vs oneDNN on ResNet-18", "tune_vs_onednn"};
  app.add_option("--threads", o.threads, "thread counts, e.g. 1,2")->delimiter(',')->capture_default_str();
  app.add_option("--layers", o.layers, "'all' or layer names, e.g. conv1,layer1.conv")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--trials", o.trials, "trials per layer and thread count")->capture_default_str();
  app.add_option("--early-stopping", o.early_stopping, "0: never")->capture_default_str();
  app.add_option("--log-prefix", o.log_prefix, "logs are PREFIX.tN.log; reruns resume them")->capture_default_str();
  app.add_option("--tuner", o.tuner, "tuner of the main table")->capture_default_str();
  app.add_option("--versus-random", o.versus_random, "layers on which to compare xgb with random")->delimiter(',');
  app.add_flag("--versus-random-only", o.versus_random_only, "only the xgb-vs-random comparison");
  app.add_option("--xgb-trials", o.xgb_trials, "xgb budget in the comparison")->capture_default_str();
  app.add_option("--random-trials", o.random_trials, "random budget in the comparison")->capture_default_str();
  app.add_option("--versus-history", o.versus_history,
                 "in the comparison, xgb first learns from this log's records of the other layers");
  app.add_option("--rounds", o.rounds, "interleaved timing rounds")->capture_default_str();
  app.add_flag("!--no-winograd", o.winograd, "tune the 3x3 stride-1 layers as direct convolutions");
  bench::add_target_flags(app, o.target);
  CLI11_PARSE(app, argc, argv);
  try {
    return bench::run(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "tune_vs_onednn: error: %s\n", e.what());
    return 1;
  }
}
