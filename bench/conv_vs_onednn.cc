// conv_vs_onednn: Tessera's best hand-written schedules against oneDNN on every
// distinct convolution of ResNet-18 (batch 1, 224x224) and its classifier, in
// one process. For each layer and thread count the two sides are measured in
// alternating rounds and each keeps its minimum, so load on the machine during
// the run hits both alike. Tessera's output is checked against the reference
// once per layer; a wrong layer is marked and left out of the geomean.
//
//   conv_vs_onednn [--threads 1,2] [--layers all|NAME,...] [--rounds N] [--min-repeat-ms MS]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "codegen/target.h"
#include "interleaved_timer.h"
#include "onednn.h"
#include "onednn_workload.h"
#include "ops/registry.h"
#include "runtime/thread_pool.h"
#include "schedule/manual_schedule.h"
#include "tessera/error.h"
#include "tessera_kernel.h"

namespace tessera::bench {

struct Layer {
  std::string name;  // torchvision's name of (the first) layer of this shape
  std::string op;
  ops::OpArgs args;
};

ops::OpArgs conv(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride,
                 int64_t size) {
  ops::OpArgs a;
  a.input = {1, in_channels, size, size};
  a.weight = {out_channels, in_channels, kernel, kernel};
  a.stride = stride;
  a.pad = kernel / 2;  // ResNet's "same" padding: 3 for 7x7, 1 for 3x3, 0 for 1x1
  a.layout = "NCHWc";
  return a;
}

std::vector<Layer> resnet18_layers() {
  ops::OpArgs fc;
  fc.input = {1, 512};
  fc.weight = {1000, 512};
  fc.bias = true;
  fc.layout = "packed";
  return {
      {"conv1", "conv2d", conv(3, 64, 7, 2, 224)},
      {"layer1.conv", "conv2d", conv(64, 64, 3, 1, 56)},
      {"layer2.0.conv1", "conv2d", conv(64, 128, 3, 2, 56)},
      {"layer2.0.downsample", "conv2d", conv(64, 128, 1, 2, 56)},
      {"layer2.conv", "conv2d", conv(128, 128, 3, 1, 28)},
      {"layer3.0.conv1", "conv2d", conv(128, 256, 3, 2, 28)},
      {"layer3.0.downsample", "conv2d", conv(128, 256, 1, 2, 28)},
      {"layer3.conv", "conv2d", conv(256, 256, 3, 1, 14)},
      {"layer4.0.conv1", "conv2d", conv(256, 512, 3, 2, 14)},
      {"layer4.0.downsample", "conv2d", conv(256, 512, 1, 2, 14)},
      {"layer4.conv", "conv2d", conv(512, 512, 3, 1, 7)},
      {"fc", "dense", fc},
  };
}

// "64->128 3x3 s2 @56" / "512->1000 dense"
std::string describe(const Layer& l) {
  const ops::OpArgs& a = l.args;
  if (l.op == "dense") return fmt::format("{}->{} dense", a.input[1], a.weight[0]);
  return fmt::format("{}->{} {}x{} s{} @{}", a.input[1], a.weight[0], a.weight[2], a.weight[3],
                     a.stride, a.input[2]);
}

struct Options {
  std::vector<int> threads{1, 2};
  std::vector<std::string> layers{"all"};
  int rounds = 5;
  int min_repeat_ms = 100;
};

std::vector<Layer> selected_layers(const Options& o) {
  std::vector<Layer> all = resnet18_layers();
  if (o.layers.size() == 1 && o.layers[0] == "all") return all;
  std::vector<Layer> chosen;
  for (const std::string& name : o.layers) {
    auto it = std::find_if(all.begin(), all.end(), [&](const Layer& l) { return l.name == name; });
    if (it == all.end()) {
      std::string names;
      for (const Layer& l : all) names += " " + l.name;
      throw Error(fmt::format("--layers: no layer '{}'; the layers are:{}", name, names));
    }
    chosen.push_back(*it);
  }
  return chosen;
}

int run(const Options& o) {
  for (int t : o.threads)
    if (t < 1) throw Error(fmt::format("--threads: {} is not a positive thread count", t));
  const std::vector<Layer> layers = selected_layers(o);
  const codegen::Target target = codegen::Target::host();
  const baseline::InterleavedOptions timing{.rounds = o.rounds, .min_repeat_ms = o.min_repeat_ms};

  fmt::print("Tessera (best hand-written schedules, NCHWc) vs {}, on {} with {}-bit vectors\n",
             baseline::version(), target.cpu, target.vector_bits);
  fmt::print("{} rounds of >= {} ms per side, interleaved; GFLOPS from each side's minimum\n\n",
             o.rounds, o.min_repeat_ms);
  const std::string header =
      fmt::format("{:<20} {:<22} {:>7} {:>14} {:>14} {:>6}  {}", "layer", "shape", "threads",
                  "tessera GFLOPS", "onednn GFLOPS", "ratio", "onednn kernel");
  fmt::print("{}\n{}\n", header, std::string(header.size(), '-'));

  std::map<int, std::vector<double>> ratios;  // per thread count, of correct layers
  int failed = 0;
  for (const Layer& layer : layers) {
    std::optional<baseline::TesseraKernel> kernel;
    std::string problem;  // why this layer's row is marked
    try {
      ops::Workload workload = ops::make_workload(layer.op, layer.args);
      kernel.emplace(workload, schedule::best_manual_schedule(workload.dag, target.vector_bits),
                     target);
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
      baseline::OneDnnLayer onednn = baseline::make_onednn_layer(layer.op, layer.args);
      baseline::SideTiming mine, theirs;
      if (kernel)
        std::tie(mine, theirs) =
            baseline::time_interleaved([&] { kernel->run(); }, [&] { onednn.run(); }, timing);
      else  // oneDNN's number is still worth a row
        theirs = baseline::time_interleaved([&] { onednn.run(); }, nullptr, timing).first;
      const double flops = kernel ? kernel->flop_count() : onednn.flop_count();
      const double g_mine = kernel ? baseline::gflops(flops, mine.min_cost()) : 0;
      const double g_theirs = baseline::gflops(flops, theirs.min_cost());
      const double ratio = g_mine / g_theirs;
      if (problem.empty()) ratios[threads].push_back(ratio);
      fmt::print("{:<20} {:<22} {:>7} {:>14.1f} {:>14.1f} {:>6.2f}  {}{}\n", layer.name,
                 describe(layer), threads, g_mine, g_theirs, ratio, onednn.implementation(),
                 problem.empty() ? "" : "  <- " + problem.substr(0, problem.find(':')));
      std::fflush(stdout);
    }
  }
  fmt::print("\n");
  for (int threads : o.threads) {
    const std::vector<double>& r = ratios[threads];
    double log_sum = 0;
    for (double x : r) log_sum += std::log(x);
    fmt::print("geomean tessera/onednn threads={}: {:.2f}{}\n", threads,
               r.empty() ? 0.0 : std::exp(log_sum / r.size()),
               failed
                   ? fmt::format(" (over {} layers; {} failed or wrong left out)", r.size(), failed)
                   : "");
  }
  return failed ? 1 : 0;
}

}  // namespace tessera::bench

int main(int argc, char** argv) {
  using namespace tessera;
  bench::Options options;
  CLI::App app{"Tessera vs oneDNN on the convolutions of ResNet-18", "conv_vs_onednn"};
  app.add_option("--threads", options.threads, "thread counts, e.g. 1,2")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--layers", options.layers, "'all' or layer names, e.g. conv1,fc")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--rounds", options.rounds, "interleaved measurements of each side")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--min-repeat-ms", options.min_repeat_ms, "shortest measurement")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    return bench::run(options);
  } catch (const Error& e) {
    std::fprintf(stderr, "conv_vs_onednn: error: %s\n", e.what());
    return 1;
  }
}
