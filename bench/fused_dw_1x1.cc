// A depthwise 3x3 and the 1x1 projection that reads it: one kernel
// (schedule/depthwise_projection_tile.h) against the two hand-written kernels
// run one after the other, on MobileNet-v2's pairs, 1 thread, warm caches.
// Sides interleaved in each round; the minimum of the rounds is quoted.
//   build/fused_dw_1x1 [--rounds 5] [--rows 1]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <vector>

#include "codegen/llvm_codegen.h"
#include "codegen/module.h"
#include "measure/kernel_args.h"
#include "measure/timer.h"
#include "ops/conv2d.h"
#include "ops/depthwise_nchwc.h"
#include "ops/elementwise.h"
#include "ops/workloads.h"
#include "runtime/thread_pool.h"
#include "schedule/depthwise_projection_tile.h"
#include "schedule/manual_schedule.h"
#include "tir/lower.h"

using namespace tessera;

namespace {

struct Pair {
  int64_t channels, size, out_channels, stride;
};

codegen::Module build(const ir::ComputeDAG& dag, const schedule::Trace& t) {
  return codegen::Module::load_object(codegen::compile_to_object(tir::lower(dag, t, "kernel"), target::Target::host()));
}

double min_ms(const std::function<void()>& f) {
  auto costs = measure::time_function(f, {.number = 20, .repeat = 3, .min_repeat_ms = 50});
  return *std::min_element(costs.begin(), costs.end()) * 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"depthwise + 1x1 projection: one kernel vs two"};
  int rounds = 5;
  int64_t rows = 1;
  app.add_option("--rounds", rounds, "interleaved rounds")->capture_default_str();
  app.add_option("--rows", rows, "output rows per tile of the fused kernel (at most)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  runtime::set_num_threads(1);
  const auto unit = target::Target::host().vector_unit();
  fmt::print("{:>24} {:>10} {:>10} {:>7}\n", "pair", "fused ms", "two ms", "ratio");
  for (const Pair& p : {Pair{32, 112, 16, 1}, Pair{96, 112, 24, 2}, Pair{144, 56, 24, 1}, Pair{192, 28, 32, 1},
                        Pair{384, 14, 64, 1}, Pair{576, 14, 96, 1}, Pair{960, 7, 160, 1}}) {
    const int64_t c = p.channels / 8, oc = p.out_channels / 8;
    const auto dw_attrs = ops::Conv2dAttrs::symmetric(p.stride, 1);
    ir::Tensor data = ir::placeholder({1, c, p.size, p.size, 8}, "data");
    ir::Tensor dw_weight = ir::placeholder({c, 1, 3, 3, 1, 8}, "dw_weight");
    ir::Tensor dw_bias = ir::placeholder({c, 8}, "dw_bias");
    ir::Tensor weight = ir::placeholder({oc, c, 1, 1, 8, 8}, "weight");
    ir::Tensor bias = ir::placeholder({oc, 8}, "bias");
    ir::Tensor mid = ops::relu(ops::bias_add(ops::depthwise_conv2d_nchwc(data, dw_weight, dw_attrs), dw_bias,
                                             std::vector<size_t>{1, 4}));
    ir::ComputeDAG fused_dag({ops::bias_add(ops::conv2d_nchwc(mid, weight, ops::Conv2dAttrs{}), bias,
                                            std::vector<size_t>{1, 4})});
    const int64_t out_rows = mid->shape[2];
    int64_t tile_rows = std::min(rows, out_rows);  // the most rows up to --rows that divide the output's
    while (out_rows % tile_rows != 0) --tile_rows;
    auto fused = build(fused_dag, schedule::depthwise_projection_trace(fused_dag, {.rows = tile_rows}));
    auto inputs = measure::make_inputs(fused_dag);
    auto outputs = measure::make_outputs(fused_dag);
    auto args = measure::kernel_arg_pointers(inputs, outputs);

    auto dw_w = ops::depthwise_conv2d_nchwc_workload({1, c, p.size, p.size, 8}, {c, 1, 3, 3, 1, 8}, dw_attrs,
                                                     {true, true});
    const ops::Shape mid_shape = dw_w.dag.outputs()[0]->shape;
    auto pw_w = ops::conv2d_nchwc_workload(mid_shape, {oc, c, 1, 1, 8, 8}, ops::Conv2dAttrs{}, {true, false});
    auto dw_k = build(dw_w.dag, schedule::best_manual_schedule(dw_w.dag, unit));
    auto pw_k = build(pw_w.dag, schedule::best_manual_schedule(pw_w.dag, unit));
    auto between = measure::make_outputs(dw_w.dag);
    auto separate_out = measure::make_outputs(pw_w.dag);
    std::vector<void*> dw_args{inputs[0].data(), inputs[1].data(), inputs[2].data(), between[0].data()};
    std::vector<void*> pw_args{between[0].data(), inputs[3].data(), inputs[4].data(), separate_out[0].data()};
    auto f = fused.function("kernel");
    auto d = dw_k.function("kernel");
    auto w = pw_k.function("kernel");
    f(args.data());
    d(dw_args.data());
    w(pw_args.data());
    const auto same = measure::compare_output(outputs[0], separate_out[0]);
    if (!same.ok) {
      fmt::print(stderr, "fused and separate kernels differ: {}\n", same.describe());
      return 1;
    }
    double fused_ms = 1e9, two_ms = 1e9;
    for (int r = 0; r < rounds; ++r) {
      fused_ms = std::min(fused_ms, min_ms([&] { f(args.data()); }));
      two_ms = std::min(two_ms, min_ms([&] {
                          d(dw_args.data());
                          w(pw_args.data());
                        }));
    }
    fmt::print("{:>24} {:10.4f} {:10.4f} {:7.2f}\n",
               fmt::format("{}@{}x{} s{} ->{}", p.channels, p.size, p.size, p.stride, p.out_channels), fused_ms, two_ms,
               fused_ms / two_ms);
  }
}
