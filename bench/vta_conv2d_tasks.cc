// Seed 003's ten VTA tuning tasks (ResNet-18's packed convolutions, the first
// one stays on the CPU) on Tessera's simulator: the conv2d_packed.vta
// template's fallback against the best of N random configs (the seed's
// tuner and budget), with cost = simulated cycles.
//
//   vta_conv2d_tasks [--trials 1000] [--seed 1]
//
// Prints the seed's progress line per task, then per task the cycles,
// GFLOPS at the configuration's clock, the GEMM core's utilisation and the
// bytes moved, untuned and tuned, and the sum over the tasks.
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "autotvm/vta/conv2d_packed.h"
#include "tessera/error.h"
#include "vta/simulator.h"

namespace {

using namespace tessera;

struct Task {
  int64_t in_blocks, size, out_blocks, kernel, stride;
};

// The seed's task list, in its order (its printed tasks 1..10).
const std::vector<Task> kSeedTasks = {
    {16, 14, 32, 1, 2}, {8, 28, 16, 1, 2},  {4, 56, 8, 1, 2},  {4, 56, 4, 3, 1},  {8, 28, 8, 3, 1},
    {4, 56, 8, 3, 2},   {16, 14, 16, 3, 1}, {8, 28, 16, 3, 2}, {32, 7, 32, 3, 1}, {16, 14, 32, 3, 2},
};

ops::Conv2dPackedAttrs attrs_of(const Task& t) {
  ops::Conv2dPackedAttrs a;
  a.in_channels = t.in_blocks * 16, a.height = a.width = t.size, a.out_channels = t.out_blocks * 16;
  a.kernel_h = a.kernel_w = t.kernel, a.stride_h = a.stride_w = t.stride, a.pad_h = a.pad_w = t.kernel / 2;
  a.bias = true, a.shift = 8, a.clip_min = 0;  // the quantized network's bias, requantisation and ReLU
  return a;
}

struct Measured {
  bool valid = false;
  vta::SimulationStats stats;
};

Measured measure(const ops::Conv2dPackedAttrs& a, const vta::Conv2dPackedSchedule& s, const vta::VtaConfig& config) {
  if (!vta::conv2d_packed_misfit(a, s, config).empty()) return {};
  vta::Program p = vta::lower_conv2d_packed(a, s, config);
  return {true, vta::Simulator(config).run(p.instructions, p.dram, vta::Execution::TimingOnly)};
}

std::string describe(const ops::Conv2dPackedAttrs& a, const Measured& m, const vta::VtaConfig& config) {
  const double seconds = config.seconds(m.stats.cycles);
  int64_t loaded = 0;
  for (const auto& [buffer, bytes] : m.stats.bytes_loaded) loaded += bytes;
  return fmt::format("{:>10} {:>7.2f} {:>5.1f}% {:>8.2f}", m.stats.cycles, a.flop() / seconds / 1e9,
                     100 * m.stats.gemm_utilisation(), (loaded + m.stats.bytes_stored) / 1e6);
}

int run(int argc, char** argv) {
  int trials = 1000;
  uint32_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--trials" && i + 1 < argc)
      trials = std::atoi(argv[++i]);
    else if (arg == "--seed" && i + 1 < argc)
      seed = static_cast<uint32_t>(std::atoi(argv[++i]));
    else
      throw Error("usage: vta_conv2d_tasks [--trials N] [--seed S]");
  }
  const vta::VtaConfig config;
  std::mt19937_64 rng(seed);
  std::vector<std::pair<Measured, Measured>> results;
  std::vector<std::string> schedules;
  for (size_t t = 0; t < kSeedTasks.size(); ++t) {
    const ops::Conv2dPackedAttrs a = attrs_of(kSeedTasks[t]);
    const autotvm::ConfigSpace space = autotvm::vta::conv2d_packed_space(a, config);
    const Measured untuned = measure(a, autotvm::vta::conv2d_packed_schedule(space.fallback()), config);
    // The seed's random tuner: distinct configs drawn uniformly, min(N, |space|) of them.
    const int64_t n = std::min<int64_t>(trials, space.size());
    std::vector<int64_t> order(space.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    Measured best;
    std::string best_schedule;
    double last_gflops = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t k = 0; k < n; ++k) {
      const vta::Conv2dPackedSchedule s = autotvm::vta::conv2d_packed_schedule(space.get(order[k]));
      const Measured m = measure(a, s, config);
      last_gflops = m.valid ? a.flop() / config.seconds(m.stats.cycles) / 1e9 : 0;
      if (m.valid && (!best.valid || m.stats.cycles < best.stats.cycles)) best = m, best_schedule = s.to_string();
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("[Task {:2}/{:2}]  Current/Best: {:7.2f}/{:7.2f} GFLOPS | Progress: ({}/{}) | {:.2f} s Done.\n", t + 1,
               kSeedTasks.size(), last_gflops, best.valid ? a.flop() / config.seconds(best.stats.cycles) / 1e9 : 0.0, n,
               trials, elapsed);
    results.emplace_back(untuned, best);
    schedules.push_back(best_schedule);
  }
  fmt::print(
      "\nVTA simulator, {} MHz, {}x{} GEMM core; untuned = the template's fallback, tuned = best of {} random "
      "configs\n",
      config.hw_freq_mhz, config.block_in(), config.block_out(), trials);
  fmt::print("{:>4} {:<44} {:>10} {:>7} {:>6} {:>8} | {:>10} {:>7} {:>6} {:>8} | {:>5}\n", "task", "convolution",
             "cycles", "GFLOPS", "GEMM", "MB", "cycles", "GFLOPS", "GEMM", "MB", "gain");
  int64_t untuned_total = 0, tuned_total = 0;
  for (size_t t = 0; t < results.size(); ++t) {
    const ops::Conv2dPackedAttrs a = attrs_of(kSeedTasks[t]);
    const auto& [untuned, tuned] = results[t];
    const std::string shape =
        fmt::format("{}x{}x{} -> {} k{} s{}", a.in_channels, a.height, a.width, a.out_channels, a.kernel_h, a.stride_h);
    fmt::print("{:>4} {:<44} {} | {} | {:>5.2f}\n", t + 1, shape, describe(a, untuned, config),
               describe(a, tuned, config), double(untuned.stats.cycles) / tuned.stats.cycles);
    untuned_total += untuned.stats.cycles, tuned_total += tuned.stats.cycles;
  }
  fmt::print("total: {} cycles untuned, {} tuned ({:.2f}x)\n", untuned_total, tuned_total,
             double(untuned_total) / tuned_total);
  fmt::print("\nbest schedules:\n");
  for (size_t t = 0; t < schedules.size(); ++t) fmt::print("{:>4} {}\n", t + 1, schedules[t]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "vta_conv2d_tasks: {}\n", e.what());
    return 1;
  }
}
