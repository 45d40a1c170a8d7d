#include "gpu_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "graph/interpreter.h"
#include "runtime/gpu_graph_executor.h"
#include "runtime/npy.h"
#include "tessera/error.h"

namespace tessera::cli {

namespace {

// GpuGraphExecutor::set_random_inputs' values, kept for the interpreter.
std::vector<runtime::NDArray> set_seeded_inputs(runtime::GpuGraphExecutor& ex) {
  std::vector<runtime::NDArray> given;
  for (int i = 0; i < ex.num_inputs(); ++i) {
    given.push_back(ex.random_input(i, 42 + static_cast<uint64_t>(i)));
    ex.set_input(i, given.back());
  }
  return given;
}

}  // namespace

bool check_gpu_artifact(const std::string& path, const graph::Graph& model) {
  runtime::GpuGraphExecutor ex = runtime::GpuGraphExecutor::load(path);
  fmt::print("device: {}\n", ex.device_name());
  const std::vector<runtime::NDArray> inputs = set_seeded_inputs(ex);
  ex.run();
  const auto want = graph::interpret(model, inputs);
  bool correct = true;
  // Half storage rounds every weight and value between kernels to 11
  // significant bits: against the fp32 interpreter, a looser bar.
  const double tolerance = measure::network_tolerance(ex.graph());
  for (int i = 0; i < ex.num_outputs(); ++i)
    correct &= check_output("", ex.graph().tensors[ex.graph().outputs[i]].name, ex.get_output(i), want.at(i), tolerance);
  return correct;
}

int run_gpu_model(const ModelCommandOptions& o, runtime::Artifact artifact) {
  runtime::GpuGraphExecutor ex(std::move(artifact), o.model);
  ex.set_random_inputs();
  for (size_t i = 0; i < o.inputs.size(); ++i) {
    const std::string& spec = o.inputs[i];
    if (spec.find('=') != std::string::npos)
      throw Error("--input " + spec + ": a GPU artifact takes its inputs in order (FILE.npy each)");
    ex.set_input(static_cast<int>(i), runtime::read_npy(spec));
  }
  ex.run();
  for (int i = 0; i < ex.num_outputs(); ++i) {
    const runtime::NDArray out = ex.get_output(i);
    std::string head;
    for (int64_t k = 0; k < out.size() && k < 6; ++k) head += fmt::format(" {:.5f}", out[k]);
    fmt::print("output {} '{}' {}:{}{}\n", i, ex.graph().tensors[ex.graph().outputs[i]].name,
               fmt::join(out.shape(), "x"), head, out.size() > 6 ? " ..." : "");
  }
  if (!o.output.empty()) {
    runtime::write_npy(ex.get_output(0), o.output);
    fmt::print("wrote {}\n", o.output);
  }
  return 0;
}

int bench_gpu_model(const ModelCommandOptions& o, runtime::Artifact artifact) {
  runtime::GpuGraphExecutor ex(std::move(artifact), o.model);
  ex.set_random_inputs();
  const runtime::BenchmarkResult r = ex.benchmark(o.number, o.repeat);
  fmt::print("{} (input {}, {}): min {:.3f} ms, median {:.3f} ms (device time)\n", o.model,
             fmt::join(ex.input_shape(0), "x"), ex.device_name(), r.min() * 1e3, r.median() * 1e3);
  fmt::print("{}\n", r.summary());
  if (!o.profile) return 0;
  const std::vector<double> seconds = ex.profile(o.number);
  std::vector<size_t> order(seconds.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return seconds[a] > seconds[b]; });
  const double total = std::accumulate(seconds.begin(), seconds.end(), 0.0);
  for (size_t i : order)
    fmt::print("  {:8.3f} ms {:5.1f}%  {}\n", seconds[i] * 1e3, 100 * seconds[i] / total, ex.graph().calls[i].kernel);
  return 0;
}

}  // namespace tessera::cli
