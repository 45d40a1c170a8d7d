// autoschedule_vs_templates: the auto-scheduler against AutoTVM's templates
// at the same trial budget, and oneDNN where it has the operator, in one run.
// For each workload and thread count: search it with the auto-scheduler and
// tune the template when one exists, on the same compute DAG (convolutions
// in NCHWc, dense with packed weights: what a network build runs; in plain
// NCHW a 56- or 14-wide image row gives no 16-lane vector), both with their
// leaders re-measured and both resumed from their logs by a rerun; then time
// the two bests (and oneDNN on the plain layout) interleaved in this process.
//
//   autoschedule_vs_templates [--threads 1,2] [--trials 200] [--workloads all|NAME,...]
//                             [--log-prefix autoschedule_vs_templates] [--auto-layout same|NHWC]
//
// --auto-layout NHWC: the auto-scheduler searches the convolutions in NHWC
// (the layout seed 001 recommends for it, what `tune --keep-layout` runs)
// while the templates keep NCHWc; same FLOPs, compared kernel to kernel.
//
// Workloads: ResNet-18's convolutions (direct) and classifier, a
// batch_matmul, a softmax (no template) and a depthwise convolution.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>

#include "autoschedule/search_task.h"
#include "autotvm/callback.h"
#include "autotvm/history.h"
#include "autotvm/task.h"
#include "autotvm/tuner.h"
#include "interleaved_timer.h"
#include "onednn.h"
#include "onednn_workload.h"
#include "records/apply_history_best.h"
#include "records/log_file.h"
#include "resnet18_layers.h"
#include "runtime/thread_pool.h"
#include "tessera_kernel.h"

namespace tessera::bench {

namespace {

struct Options {
  std::vector<int> threads{1, 2};
  std::vector<std::string> workloads{"all"};
  int trials = 200;
  std::string log_prefix = "autoschedule_vs_templates";
  std::string auto_layout = "same";
  int rounds = 5, min_repeat_ms = 100;
};

struct Workload {
  std::string name;
  std::string op;
  ops::OpArgs args;           // NCHWc convolutions, packed dense
  bool has_template = true;   // softmax has none
  ops::OpArgs plain_args() const {
    ops::OpArgs a = args;
    a.layout = op == "dense" ? "NK" : "NCHW";
    return a;
  }
};

std::vector<Workload> all_workloads() {
  std::vector<Workload> out;
  for (const Layer& l : resnet18_layers()) out.push_back({l.name, l.op, l.args});
  ops::OpArgs bmm;
  bmm.input = {12, 128, 64};
  bmm.weight = {12, 128, 64};
  out.push_back({"batch_matmul", "batch_matmul", bmm});
  ops::OpArgs softmax;
  softmax.input = {128, 1000};
  out.push_back({"softmax", "softmax", softmax, false});
  ops::OpArgs dw;
  dw.input = {1, 144, 56, 56};
  dw.weight = {144, 1, 3, 3};
  dw.pad = 1;
  dw.layout = "NCHWc";
  out.push_back({"depthwise", "depthwise_conv2d", dw});
  return out;
}

measure::LocalRunnerOptions runner_options(int threads) {
  measure::LocalRunnerOptions run;
  run.number = 2;
  run.repeat = 3;
  run.min_repeat_ms = 20;
  run.check_correctness = true;
  run.num_threads = threads;
  return run;
}

schedule::Trace search_auto(const ops::Workload& w, const target::Target& target, int trials, const std::string& log,
                            const std::string& name) {
  measure::LocalBuilder builder;
  const measure::LocalRunnerOptions run = runner_options(target.threads);
  measure::LocalRunner runner(run, w.reference);
  measure::LocalRunner confirm(autotvm::confirm_runner_options(run));
  autoschedule::XgbStoreCostModel model;
  const auto r = autoschedule::search_task(
      autoschedule::SearchTask{name, w.dag, target, nlohmann::json{{"op", w.op}}}, model,
      autoschedule::SearchOptions{.n_trial = trials, .log = log, .confirm_runner = &confirm}, builder, runner,
      std::cout, std::cerr);
  return r.best_trace;
}

schedule::Trace tune_template(const autotvm::Task& task, int trials, const std::string& log, const std::string& name) {
  auto tuner = autotvm::make_tuner("xgb", task);
  int64_t done = 0;
  if (std::filesystem::exists(log))
    done = autotvm::load_history(*tuner, task, records::load_records(log, std::cerr), false, std::cerr);
  const int remaining = static_cast<int>(std::max<int64_t>(0, trials - done));
  if (remaining > 0) {
    measure::LocalBuilder builder;
    const measure::LocalRunnerOptions run = runner_options(task.target.threads);
    measure::LocalRunner runner(run, task.workload.reference);
    measure::LocalRunner confirm(autotvm::confirm_runner_options(run));
    tuner->tune(autotvm::TuneOptions{.n_trial = remaining}, autotvm::MeasureOption{&builder, &runner, &confirm},
                {autotvm::progress_bar(remaining, "[template " + name + "] ", std::cout), autotvm::log_to_file(log)});
  }
  auto history = records::ApplyHistoryBest::from_file(log, std::cerr);
  return autotvm::dispatch(task, history, std::cerr).trace;
}

int run(const Options& o) {
  std::vector<Workload> chosen;
  for (const Workload& w : all_workloads())
    if (o.workloads == std::vector<std::string>{"all"} ||
        std::find(o.workloads.begin(), o.workloads.end(), w.name) != o.workloads.end())
      chosen.push_back(w);
  if (chosen.empty()) throw Error("--workloads: no workload of that name");
  const baseline::InterleavedOptions timing{.rounds = o.rounds, .min_repeat_ms = o.min_repeat_ms};
  std::vector<std::string> rows;
  std::vector<double> conv_ratios;
  for (int threads : o.threads) {
    target::Target target = target::Target::host();
    target.threads = threads;
    for (const Workload& w : chosen) {
      const std::string logs = fmt::format("{}.{}.t{}", o.log_prefix, w.name, threads);
      const ops::OpArgs args = ops::with_vector_blocks(w.op, w.args, target.vector_lanes());
      std::optional<autotvm::Task> task;
      if (w.has_template) task.emplace(autotvm::create_task(w.op, args, target));
      ops::Workload auto_workload = task ? task->workload : ops::make_workload(w.op, args);
      const bool nhwc = o.auto_layout == "NHWC" && (w.op == "conv2d" || w.op == "depthwise_conv2d");
      if (nhwc) {
        ops::OpArgs channels_last = w.args;
        channels_last.layout = "NHWC";
        channels_last.ic_bn = channels_last.oc_bn = 0;
        auto_workload = ops::make_workload(w.op, channels_last);
      }
      auto start = std::chrono::steady_clock::now();
      const schedule::Trace auto_best = search_auto(auto_workload, target, o.trials, logs + (nhwc ? ".auto-nhwc.log" : ".auto.log"), w.name);
      const double auto_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      runtime::set_num_threads(threads);
      baseline::set_threads(threads);
      baseline::TesseraKernel auto_kernel(auto_workload, auto_best, target);
      const bool auto_ok = auto_kernel.check().correct;
      const double flop = auto_kernel.flop_count();

      std::string template_text = "-", ratio_text = "-", onednn_text = "-";
      double template_s = 0;
      if (w.has_template) {
        start = std::chrono::steady_clock::now();
        const schedule::Trace t_best = tune_template(*task, o.trials, logs + ".templates.log", w.name);
        template_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        runtime::set_num_threads(threads);
        baseline::TesseraKernel t_kernel(task->workload, t_best, target);
        auto [a, t] = baseline::time_interleaved([&] { auto_kernel.run(); }, [&] { t_kernel.run(); }, timing);
        const double ga = baseline::gflops(flop, a.min_cost()), gt = baseline::gflops(flop, t.min_cost());
        template_text = fmt::format("{:.1f}", gt);
        ratio_text = fmt::format("{:.2f}", ga / gt);
        if (w.op == "conv2d") conv_ratios.push_back(ga / gt);
      }
      if (baseline::has_onednn_counterpart(w.op)) {
        baseline::OneDnnLayer onednn = baseline::make_onednn_layer(w.op, w.plain_args());
        auto [a, d] = baseline::time_interleaved([&] { auto_kernel.run(); }, [&] { onednn.run(); }, timing);
        onednn_text = fmt::format("{:.1f}", baseline::gflops(flop, d.min_cost()));
      }
      auto [a, a2] = baseline::time_interleaved([&] { auto_kernel.run(); }, [&] { auto_kernel.run(); }, timing);
      rows.push_back(fmt::format("{:<20} {:>3} {:>12.1f} {:>12} {:>7} {:>10} {:>8.0f} {:>8.0f}{}", w.name, threads,
                                 baseline::gflops(flop, std::min(a.min_cost(), a2.min_cost())), template_text,
                                 ratio_text, onednn_text, auto_s, template_s, auto_ok ? "" : "  <- WRONG"));
      std::cout << rows.back() << std::endl;
    }
  }
  const std::string header = fmt::format("{:<20} {:>3} {:>12} {:>12} {:>7} {:>10} {:>8} {:>8}", "workload", "thr",
                                         "auto GFLOPS", "tmpl GFLOPS", "ratio", "oneDNN", "auto s", "tmpl s");
  fmt::print("\n{} trials each, {}{}\n{}\n{}\n", o.trials, target::Target::host().str(),
             o.auto_layout == "NHWC" ? "; auto-scheduler on NHWC convolutions, templates on NCHWc" : "", header,
             std::string(header.size(), '-'));
  for (const auto& r : rows) fmt::print("{}\n", r);
  if (!conv_ratios.empty()) {
    double log_sum = 0;
    for (double x : conv_ratios) log_sum += std::log(x);
    fmt::print("geomean auto/templates over the convolutions: {:.2f}\n", std::exp(log_sum / conv_ratios.size()));
  }
  return 0;
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) {
  tessera::bench::Options o;
  CLI::App app{"the auto-scheduler vs AutoTVM's templates (and oneDNN) at the same trial budget"};
  app.add_option("--threads", o.threads)->delimiter(',');
  app.add_option("--workloads", o.workloads)->delimiter(',');
  app.add_option("--trials", o.trials);
  app.add_option("--log-prefix", o.log_prefix);
  app.add_option("--auto-layout", o.auto_layout)->check(CLI::IsMember({"same", "NHWC"}));
  CLI11_PARSE(app, argc, argv);
  try {
    return tessera::bench::run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "autoschedule_vs_templates: error: %s\n", e.what());
    return 1;
  }
}
