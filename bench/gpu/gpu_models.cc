// The device check's Tessera side (bench/gpu/device_check.sh): models
// compiled for a GPU target, each checked against the reference interpreter
// and timed on the device, one JSON line per (model, batch). A program of
// its own, not the CLI, so that what travels to the device machine leaves
// oneDNN (the CLI's CPU baseline) behind.
//
//   gpu_models --target cuda --batch 1 [--check] [--bench] [--dim sequence=128]
//              [--records LOG] [--tune templates|auto --minutes M --log LOG] [--profile]
//              [--dtype float16] [--convolutions direct|winograd|implicit-gemm]
//              [--no-shipped-records] [--no-untuned-tensor-cores] [--untuned-pipelined]
//              [--layout NHWC] MODEL...
// --dtype float16 compiles (and with --tune, tunes) the networks in half
// storage, checked against the fp32 interpreter at the half tolerance; a
// "cuda -tf32" target's fp32 products run on tensor cores in TF32, checked
// at the same tolerance.
// --tune tunes each model first (driver::tune_network: its progress on
// stderr, the records in --log, resumed where the log has some), then
// compiles it with the log's best records; --records compiles with a log's.
// --no-untuned-tensor-cores: half products without a record take the
// hand-written CUDA-core schedule instead of the tensor-core fallback.
// --untuned-pipelined: kernels without a record load their reductions' next
// step while one computes (build::BuildOptions::untuned_pipeline).
// --layout NHWC builds a zoo model in NHWC (its convolutions then products
// whose window rows are channels: ops/conv2d_implicit_gemm.h).
// --profile adds each kernel call's device time (the per-layer comparison
// of two searches: bench/gpu/compare_searches.py).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/compile.h"
#include "driver/parse_target.h"
#include "driver/tune_network.h"
#include "graph/interpreter.h"
#include "graph/model_source.h"
#include "measure/kernel_args.h"
#include "runtime/gpu_graph_executor.h"
#include "tessera/error.h"

using namespace tessera;

namespace {

struct Tuning {
  std::string search;  // "": none
  double minutes = 4;
  std::string log;
  std::string records;  // a log to compile with, when not tuning
  bool profile = false;
  std::string dtype = "float32";
  std::string convolutions = "auto";
  bool shipped_records = true;
  bool untuned_tensor_cores = true;
  bool untuned_pipeline = false;
};

nlohmann::json run_model(const std::string& name, const target::Target& target, const graph::ModelOptions& options,
                         bool check, bool bench, const Tuning& tuning) {
  nlohmann::json line{{"model", name}, {"batch", options.batch}, {"target", target.str()}, {"dtype", tuning.dtype}};
  const graph::Graph model = graph::load_model(name, options);
  driver::CompileOptions compile_options;
  compile_options.dtype = tuning.dtype;
  compile_options.convolutions = tuning.convolutions;
  compile_options.shipped_records = tuning.shipped_records;
  compile_options.untuned_tensor_cores = tuning.untuned_tensor_cores;
  compile_options.untuned_pipeline = tuning.untuned_pipeline;
  line["convolutions"] = tuning.convolutions;
  if (!tuning.search.empty()) {
    driver::TuneOptions t;
    t.log = tuning.log;
    t.search = tuning.search;
    t.time_budget_min = tuning.minutes;
    t.dtype = tuning.dtype;
    t.convolutions = tuning.convolutions;
    t.evaluate = false;  // --bench times the result
    const driver::TuneResult r = driver::tune_network(model, target, t, std::cerr, std::cerr);
    line["tune"] = {{"search", t.search}, {"tasks", r.tasks}, {"trials", r.trials}, {"seconds", r.seconds}};
    compile_options.records = {tuning.log};
  } else if (!tuning.records.empty()) {
    compile_options.records = {tuning.records};
  }
  const auto start = std::chrono::steady_clock::now();
  build::BuildResult built = driver::compile(model, target, compile_options);
  line["compile_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  line["kernels"] = built.kernels.size();
  line["kernels_tuned"] = std::count_if(built.kernels.begin(), built.kernels.end(),
                                        [](const build::KernelSummary& k) { return k.tuned; });
  runtime::GpuGraphExecutor ex(std::move(built.artifact), name);
  line["device"] = ex.device_name();
  std::vector<runtime::NDArray> inputs;
  for (int i = 0; i < ex.num_inputs(); ++i) {
    inputs.push_back(runtime::seeded_input(ex.input_shape(i), ex.input_is_integer(i), 42 + static_cast<uint64_t>(i)));
    ex.set_input(i, inputs.back());
  }
  if (check) {
    ex.run();
    const auto reference_start = std::chrono::steady_clock::now();
    const auto want = graph::interpret(model, inputs);
    line["reference_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - reference_start).count();
    bool ok = true;
    double worst = 0;
    // TF32 rounds every product's operands as half storage rounds values.
    const double tolerance =
        target.tf32 ? std::max(measure::network_tolerance(ex.graph()), measure::kHalfNetworkTolerance)
                    : measure::network_tolerance(ex.graph());
    for (int i = 0; i < ex.num_outputs(); ++i) {
      const measure::OutputComparison c = measure::compare_output(ex.get_output(i), want.at(i), tolerance);
      ok &= c.ok;
      worst = std::max(worst, c.max_rel_error);
    }
    line["correct"] = ok;
    line["max_rel_error"] = worst;
  }
  if (bench) {
    const runtime::BenchmarkResult r = ex.benchmark(20, 5);
    line["min_ms"] = r.min() * 1e3;
    line["median_ms"] = r.median() * 1e3;
    line["summary"] = r.summary();
  }
  if (tuning.profile) {
    std::map<std::string, std::string> nodes;
    for (const auto& k : built.kernels) nodes[k.name] = k.nodes;
    const std::vector<double> seconds = ex.profile(20);
    nlohmann::json calls = nlohmann::json::array();
    for (size_t i = 0; i < seconds.size(); ++i) {
      const std::string& kernel = ex.graph().calls[i].kernel;
      calls.push_back({{"kernel", kernel}, {"nodes", nodes[kernel]}, {"ms", seconds[i] * 1e3}});
    }
    line["profile"] = calls;
  }
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  std::string target_text = "cuda";
  graph::ModelOptions options;
  options.batch = 1;
  bool check = false, bench = false;
  Tuning tuning;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--target" && i + 1 < argc) target_text = argv[++i];
    else if (a == "--batch" && i + 1 < argc) options.batch = std::atoll(argv[++i]);
    else if (a == "--layout" && i + 1 < argc) options.layout = argv[++i];
    else if (a == "--check") check = true;
    else if (a == "--bench") bench = true;
    else if (a == "--tune" && i + 1 < argc) tuning.search = argv[++i];
    else if (a == "--minutes" && i + 1 < argc) tuning.minutes = std::atof(argv[++i]);
    else if (a == "--log" && i + 1 < argc) tuning.log = argv[++i];
    else if (a == "--records" && i + 1 < argc) tuning.records = argv[++i];
    else if (a == "--profile") tuning.profile = true;
    else if (a == "--dtype" && i + 1 < argc) tuning.dtype = argv[++i];
    else if (a == "--convolutions" && i + 1 < argc) tuning.convolutions = argv[++i];
    else if (a == "--no-shipped-records") tuning.shipped_records = false;
    else if (a == "--no-untuned-tensor-cores") tuning.untuned_tensor_cores = false;
    else if (a == "--untuned-pipelined") tuning.untuned_pipeline = true;
    else if (a == "--dim" && i + 1 < argc) {
      const std::string d = argv[++i];
      options.dims[d.substr(0, d.find('='))] = std::atoll(d.c_str() + d.find('=') + 1);
    } else models.push_back(a);
  }
  if (!tuning.search.empty() && tuning.log.empty()) {
    std::cerr << "gpu_models: --tune needs --log FILE\n";
    return 2;
  }
  int failures = 0;
  for (const std::string& m : models) {
    try {
      const nlohmann::json line = run_model(m, driver::parse_target(target_text), options, check, bench, tuning);
      failures += line.value("correct", true) ? 0 : 1;
      std::cout << line.dump() << std::endl;
    } catch (const Error& e) {
      ++failures;
      std::cout << nlohmann::json{{"model", m}, {"batch", options.batch}, {"error", e.what()}}.dump() << std::endl;
    }
  }
  return failures == 0 ? 0 : 1;
}
