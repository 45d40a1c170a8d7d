// conv_vs_onednn: Tessera's best hand-written schedules against oneDNN on every
// distinct convolution of ResNet-18 (batch 1, 224x224) and its classifier, in
// one process. For each layer and thread count the two sides are measured in
// alternating rounds and each keeps its minimum, so load on the machine during
// the run hits both alike. Tessera's output is checked against the reference
// once per layer; a wrong layer is marked and left out of the geomean.
//
// The 3x3 stride-1 layers run as a network build runs them, by Winograd
// F(4x4, 3x3) (--no-winograd: directly); oneDNN computes them directly.
//
//   conv_vs_onednn [--threads 1,2] [--layers all|NAME,...] [--rounds N] [--min-repeat-ms MS]
//                  [--no-winograd] [--target TARGET | --isa avx2|avx512]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "bench_target.h"
#include "target/target.h"
#include "interleaved_timer.h"
#include "onednn.h"
#include "onednn_workload.h"
#include "ops/registry.h"
#include "resnet18_layers.h"
#include "runtime/thread_pool.h"
#include "schedule/manual_schedule.h"
#include "tessera/error.h"
#include "tessera_kernel.h"

namespace tessera::bench {

struct Options {
  std::vector<int> threads{1, 2};
  std::vector<std::string> layers{"all"};
  int rounds = 5;
  int min_repeat_ms = 100;
  bool winograd = true;
  TargetChoice target;
};

int run(const Options& o) {
  for (int t : o.threads)
    if (t < 1) throw Error(fmt::format("--threads: {} is not a positive thread count", t));
  const std::vector<Layer> layers = select_layers(o.layers, o.winograd);
  const target::Target target = choose_target(o.target);
  const baseline::InterleavedOptions timing{.rounds = o.rounds, .min_repeat_ms = o.min_repeat_ms};

  fmt::print("Tessera (best hand-written schedules, NCHWc) vs {}, on {} with {}-bit vectors ({})\n",
             baseline::version(), target.cpu, target.vector_bits, target.isa);
  fmt::print("{} rounds of >= {} ms per side, interleaved; GFLOPS from each side's minimum\n\n", o.rounds,
             o.min_repeat_ms);
  const std::string header = fmt::format("{:<20} {:<22} {:>7} {:>14} {:>14} {:>6}  {}", "layer", "shape", "threads",
                                         "tessera GFLOPS", "onednn GFLOPS", "ratio", "onednn kernel");
  fmt::print("{}\n{}\n", header, std::string(header.size(), '-'));

  std::map<int, std::vector<double>> ratios;  // per thread count, of correct layers
  std::set<std::string> onednn_kernels;
  int failed = 0;
  for (Layer layer : layers) {
    layer.args = ops::with_vector_blocks(layer.op, layer.args, target.vector_lanes());
    std::optional<baseline::TesseraKernel> kernel;
    std::string problem;  // why this layer's row is marked
    try {
      ops::Workload workload = ops::make_workload(layer.op, layer.args);
      kernel.emplace(workload, schedule::best_manual_schedule(workload.dag, target.vector_unit()), target);
      baseline::CheckResult c = kernel->check();
      if (!c.correct) problem = "WRONG: " + c.detail;
    } catch (const Error& e) {
      problem = std::string("failed: ") + e.what();
    }
    if (!problem.empty()) {
      ++failed;
      std::fprintf(stderr, "%s: tessera %s\n", layer.name.c_str(), problem.c_str());
    }
    for (int threads : o.threads) {
      runtime::set_num_threads(threads);
      baseline::set_threads(threads);
      baseline::OneDnnLayer onednn = baseline::make_onednn_layer(layer.baseline_op(), layer.args);
      onednn_kernels.insert(onednn.implementation());
      baseline::SideTiming mine, theirs;
      if (kernel)
        std::tie(mine, theirs) = baseline::time_interleaved([&] { kernel->run(); }, [&] { onednn.run(); }, timing);
      else  // oneDNN's number is still worth a row
        theirs = baseline::time_interleaved([&] { onednn.run(); }, nullptr, timing).first;
      // The convolution's own count (a Winograd DAG counts its transforms and
      // its fewer products instead), the same for both sides.
      const double flops = onednn.flop_count();
      const double g_mine = kernel ? baseline::gflops(flops, mine.min_cost()) : 0;
      const double g_theirs = baseline::gflops(flops, theirs.min_cost());
      const double ratio = g_mine / g_theirs;
      if (problem.empty()) ratios[threads].push_back(ratio);
      fmt::print("{:<20} {:<22} {:>7} {:>14.1f} {:>14.1f} {:>6.2f}  {}{}\n", layer.name, describe(layer), threads,
                 g_mine, g_theirs, ratio, onednn.implementation(),
                 problem.empty() ? "" : "  <- " + problem.substr(0, problem.find(':')));
      std::fflush(stdout);
    }
  }
  fmt::print("\n");
  print_isas(target, onednn_kernels);
  for (int threads : o.threads) {
    const std::vector<double>& r = ratios[threads];
    double log_sum = 0;
    for (double x : r) log_sum += std::log(x);
    fmt::print("geomean tessera/onednn threads={}: {:.2f}{}\n", threads, r.empty() ? 0.0 : std::exp(log_sum / r.size()),
               failed ? fmt::format(" (over {} layers; {} failed or wrong left out)", r.size(), failed) : "");
  }
  return failed ? 1 : 0;
}

}  // namespace tessera::bench

int main(int argc, char** argv) {
  using namespace tessera;
  bench::Options options;
  CLI::App app{"Tessera vs oneDNN on the convolutions of ResNet-18", "conv_vs_onednn"};
  app.add_option("--threads", options.threads, "thread counts, e.g. 1,2")->delimiter(',')->capture_default_str();
  app.add_option("--layers", options.layers, "'all' or layer names, e.g. conv1,fc")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--rounds", options.rounds, "interleaved measurements of each side")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--min-repeat-ms", options.min_repeat_ms, "shortest measurement")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("!--no-winograd", options.winograd, "compute the 3x3 stride-1 layers directly, not by Winograd");
  bench::add_target_flags(app, options.target);
  CLI11_PARSE(app, argc, argv);
  try {
    return bench::run(options);
  } catch (const Error& e) {
    std::fprintf(stderr, "conv_vs_onednn: error: %s\n", e.what());
    return 1;
  }
}
