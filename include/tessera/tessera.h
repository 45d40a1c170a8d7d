#pragma once
// Tessera's public C++ API: load a network, compile it (with tuning records)
// into an artifact, tune it, jit it, read records, run it. The Python package
// (python/tessera) has the same names: load_model, compile, tune, pick_best,
// load_records; tessera.jit is jit_model here, and its Module is a
// GraphExecutor behind a call.
//
//   tessera::Graph model = tessera::load_model("resnet-18");
//   tessera::tune(model, {.log = "r18.log", .trials = 300});        // seed 000's progress lines
//   tessera::Artifact artifact = tessera::compile(model, {.records = {"r18.log"}});
//   tessera::write_artifact(artifact, "resnet-18.tsr");             // deploy ...
//   tessera::GraphExecutor ex = tessera::GraphExecutor::load("resnet-18.tsr");  // ... and run
//   ex.set_input("data", image);
//   ex.run();
//   tessera::NDArray logits = ex.get_output(0);
//
// A dimension that varies: one artifact for a range of it, any size in it run
// (graph/varying_dimension.h):
//   tessera::ModelOptions o;  graph::parse_dim_flag("sequence=1..512", o);
//   tessera::Artifact bert = tessera::compile_range("bert.onnx", o);
//   tessera::VaryingExecutor vx(std::move(bert), "bert");  // set_input with any length, run, get_output
//
// On a GPU: compile(model, {}, "cuda") (the GPU present, else sm_80) and run
// with a GpuGraphExecutor (inputs and outputs from host or device memory).
//
// Running an artifact needs only the runtime library (tessera_runtime): see
// examples/run_artifact.cc; examples/ shows each of the others.
#include <iostream>
#include <string>
#include <vector>

#include "target/target.h"
#include "driver/compile.h"
#include "driver/parse_target.h"
#include "driver/tune_network.h"
#include "graph/model_source.h"
#include "jit/jit_model.h"
#include "records/log_file.h"
#include "records/pick_best.h"
#include "runtime/gpu_graph_executor.h"
#include "runtime/graph_executor.h"
#include "runtime/varying_executor.h"
#include "tessera/error.h"

namespace tessera {

using target::Target;
using driver::CompileOptions;
using driver::TuneOptions;
using driver::TuneResult;
using graph::Graph;
using graph::ModelOptions;
using jit::JitMode;
using jit::JitModel;
using jit::JitOptions;
using jit::JitOutput;
using records::Record;
using runtime::Artifact;
using runtime::GpuGraphExecutor;
using runtime::GraphExecutor;
using runtime::NDArray;
using runtime::VaryingExecutor;
using runtime::read_artifact;
using runtime::write_artifact;

// A zoo name ("resnet-18", "mobilenet-v2", ...) or an .onnx file.
inline Graph load_model(const std::string& model, const ModelOptions& options = {}) {
  return graph::load_model(model, options);
}

// `target`: "" for this host, or e.g. "llvm -mcpu=znver3 -threads=2", "cuda"
// (the GPU present, else sm_80), "opencl".
inline Target target_of(const std::string& target) { return driver::parse_target(target); }

// The artifact of `model` for `target`, its kernels scheduled by the best
// records of options.records (hand-written schedules without).
inline Artifact compile(const Graph& model, const CompileOptions& options = {}, const std::string& target = "") {
  return driver::compile(model, target_of(target), options).artifact;
}

// The artifact of `model` (a file) over the range of one dimension that
// `options` gives (--dim NAME=MIN..MAX): one graph per bucket, run by a
// VaryingExecutor at any size in the range.
inline Artifact compile_range(const std::string& model, const ModelOptions& options,
                              const CompileOptions& compile = {}, const std::string& target = "") {
  if (!options.varying) throw Error(model + ": compile_range needs a dimension given a range");
  return driver::compile_varying([&](int64_t size) { return graph::load_model(model, options.at_size(size)); },
                                 *options.varying, target_of(target), compile)
      .artifact;
}

// Tunes `model`'s kernels into options.log (resumed when it exists), with
// the seed's progress lines on std::cout.
inline TuneResult tune(const Graph& model, const TuneOptions& options, const std::string& target = "") {
  return driver::tune_network(model, target_of(target), options, std::cout, std::cerr);
}

// Compiles on the first call per input shape (seed 004): a zoo name or an
// .onnx file, at the batch of the first input. Python's tessera.jit (in C++,
// `jit` names the namespace).
inline JitModel jit_model(const std::string& model, const JitOptions& options = {}) {
  return JitModel(model, jit::model_source(model), options);
}

// The records of a log (damaged lines skipped with a warning on std::cerr).
inline std::vector<Record> load_records(const std::string& log) { return records::load_records(log, std::cerr); }

// The best valid record per task of `log`, written to `out` (another file:
// a log is never shrunk in place). Returns how many were written.
inline size_t pick_best(const std::string& log, const std::string& out) {
  return records::pick_best_file(log, out, std::cerr);
}

}  // namespace tessera
