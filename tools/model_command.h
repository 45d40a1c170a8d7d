#pragma once
// The whole-network verbs:
//   tessera compile MODEL [--batch N] [--layout NCHW|NHWC] [--target T] [--threads N] [--records LOG] [--check]
//                   [--no-winograd] [--fuse-depthwise-rows N] [--no-shipped-records]
//                   -o model.tsr
//   tessera run model.tsr [--input [NAME=]x.npy]... [--output y.npy] [--threads N]
//   tessera bench MODEL|model.tsr [--batch N] [--layout L] [--threads N] [--records LOG] [--number N] [--repeat N]
//                 [--profile] [--no-winograd] [--fuse-depthwise-rows N] [--no-shipped-records]
//   tessera show MODEL [--batch N] [--layout L] [--tasks]
// MODEL is a zoo name (resnet-18, mobilenet-v2, ...) or an .onnx file.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "graph/fuse.h"
#include "measure/kernel_args.h"
#include "runtime/ndarray.h"

#include "model_flags.h"
#include "quantize_flags.h"

namespace tessera::cli {

struct ModelCommandOptions {
  std::string model;       // zoo name, .onnx file, or (run, bench) an artifact
  ModelFlags model_flags;  // --batch, --layout, --shape, --dim
  std::string target;      // empty: the host
  int threads = 0;         // 0: the target's, else one per core
  std::string output;      // compile: the artifact; run: the first output as .npy
  std::vector<std::string> inputs;  // run: [NAME=]FILE.npy
  int number = 10, repeat = 5;      // bench
  std::vector<int64_t> sizes;       // bench of a varying artifact: the sizes to time (default: its buckets)
  bool profile = false;             // bench: time each kernel call too
  bool check = false;               // compile: compare with the reference interpreter
  std::string records;              // compile, bench: a tuning log whose best records schedule the kernels
  bool no_shipped_records = false;  // compile, bench: without records, the hand-written schedules (no pre-tuned ones)
  std::string dtype = "float32";    // compile, bench: float16 stores weights and activations in half (GPU targets)
  std::string convolutions = "auto";  // compile, bench: driver::CompileOptions::convolutions
  QuantizeFlags quantization;       // compile, bench: --quantize int8 and its calibration
  bool tasks = false;               // show: the tuning tasks instead of the graph
  bool no_winograd = false;         // compile, bench, show: every convolution computed directly
  bool keep_layout = false;         // compile, bench, show: kernels in the model's layout
  // compile, bench: depthwise + projection kernels from this many output rows (0: never)
  int64_t fuse_depthwise_rows = graph::FuseOptions{}.depthwise_projection_min_rows;
};

struct ModelCommands {
  CLI::App *compile, *run, *bench, *show;
};

ModelCommands add_model_commands(CLI::App& app, ModelCommandOptions& o);
int run_compile(const ModelCommandOptions& o);
int run_model(const ModelCommandOptions& o);
int run_bench(const ModelCommandOptions& o);
int run_show(const ModelCommandOptions& o);
// Compares a compiled output with the reference interpreter's and prints
// "PREFIXoutput 'NAME': max abs error ...: correct" (or WRONG); true if correct.
bool check_output(const std::string& prefix, const std::string& name, const runtime::NDArray& got,
                  const runtime::NDArray& want, double tolerance = measure::kDefaultTolerance);

}  // namespace tessera::cli
