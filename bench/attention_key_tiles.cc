// The attention kernel (ops/attention.cc) at BERT-base's head shapes (12
// heads of 64, a padding mask) for growing sequences: its key tiles as the
// operator chooses them (key_tile) against one tile of the whole row of
// keys, 1 thread, warm caches, sides interleaved, minimum of the rounds. A
// tile's scores are rows x keys floats: with whole rows they grow with the
// sequence (4 x 4096 x 4 B = 64 KiB at 4096 tokens, past L1), with key
// tiles they stay at most 4 x 256 x 4 B = 4 KiB.
//   build/attention_key_tiles [--rounds 5] [--max 4096] [--tokens 128,197]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <vector>

#include "codegen/llvm_codegen.h"
#include "codegen/module.h"
#include "measure/kernel_args.h"
#include "measure/timer.h"
#include "ops/attention.h"
#include "ops/operator.h"
#include "runtime/thread_pool.h"
#include "schedule/manual_schedule.h"
#include "tir/lower.h"

using namespace tessera;

namespace {

struct Kernel {
  ir::ComputeDAG dag;
  codegen::Module module;
};

Kernel build(int64_t heads, int64_t n, int64_t d, int64_t keys) {
  ops::AttentionAttrs a;
  a.scale = 0.125;
  a.heads = heads;
  a.has_mask = true;
  a.keys = keys;
  const ops::Attrs attrs = a;
  const ops::Shape qkv{heads, n, d}, mask{1, 1, 1, n};
  const ops::OperatorCall call{attrs, {qkv, qkv, qkv, mask}, qkv, {false, false, false, false}};
  std::vector<ir::Tensor> in = {ir::placeholder(qkv, "q"), ir::placeholder(qkv, "k"), ir::placeholder(qkv, "v"),
                                ir::placeholder(mask, "mask")};
  ir::ComputeDAG dag({ops::find_operator("attention").compute(call, in)});
  const auto trace = schedule::best_manual_schedule(dag, target::Target::host().vector_unit());
  return {dag, codegen::Module::load_object(
                   codegen::compile_to_object(tir::lower(dag, trace, "kernel"), target::Target::host()))};
}

double min_ms(const std::function<void()>& f) {
  auto costs = measure::time_function(f, {.number = 5, .repeat = 3, .min_repeat_ms = 50});
  return *std::min_element(costs.begin(), costs.end()) * 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attention: key tiles against whole rows of keys"};
  int rounds = 5;
  int64_t max = 4096;
  app.add_option("--rounds", rounds, "interleaved rounds")->capture_default_str();
  app.add_option("--max", max, "longest sequence (from 128, doubling)")->capture_default_str();
  std::vector<int64_t> tokens;
  app.add_option("--tokens", tokens, "these sequence lengths instead (ViT-B/16: 197)")->delimiter(',');
  CLI11_PARSE(app, argc, argv);
  if (tokens.empty())
    for (int64_t n = 128; n <= max; n *= 2) tokens.push_back(n);
  runtime::set_num_threads(1);
  const int64_t heads = 12, d = 64;
  fmt::print("{:>8} {:>6} {:>12} {:>9} {:>14} {:>9} {:>7}\n", "tokens", "keys", "tiled ms", "GFLOPS", "whole-row ms",
             "GFLOPS", "ratio");
  for (const int64_t n : tokens) {
    Kernel tiled = build(heads, n, d, 0), whole = build(heads, n, d, n);
    auto inputs = measure::make_inputs(tiled.dag);
    auto out_tiled = measure::make_outputs(tiled.dag), out_whole = measure::make_outputs(whole.dag);
    auto args_tiled = measure::kernel_arg_pointers(inputs, out_tiled);
    auto args_whole = measure::kernel_arg_pointers(inputs, out_whole);
    auto f = tiled.module.function("kernel");
    auto g = whole.module.function("kernel");
    f(args_tiled.data());
    g(args_whole.data());
    const auto same = measure::compare_output(out_tiled[0], out_whole[0]);
    if (!same.ok) {
      fmt::print(stderr, "key tiles and whole rows differ at {} tokens: {}\n", n, same.describe());
      return 1;
    }
    double tiled_ms = 1e9, whole_ms = 1e9;
    for (int r = 0; r < rounds; ++r) {
      tiled_ms = std::min(tiled_ms, min_ms([&] { f(args_tiled.data()); }));
      whole_ms = std::min(whole_ms, min_ms([&] { g(args_whole.data()); }));
    }
    const double flops = 4.0 * heads * n * n * d;  // the two products
    fmt::print("{:>8} {:>6} {:12.3f} {:9.1f} {:14.3f} {:9.1f} {:7.2f}\n", n, ops::key_tile(n, 0), tiled_ms,
               flops / tiled_ms / 1e6, whole_ms, flops / whole_ms / 1e6, tiled_ms / whole_ms);
  }
}
