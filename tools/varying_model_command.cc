#include "varying_model_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "graph/interpreter.h"
#include "runtime/memory_plan.h"
#include "runtime/npy.h"
#include "runtime/thread_pool.h"
#include "operator_flags.h"
#include "runtime/varying_executor.h"
#include "target_flags.h"
#include "tessera/error.h"

namespace tessera::cli {
namespace {

// The sizes --check compares at: the smallest, one between two buckets
// (padded), and the largest; the buckets when only they run.
std::vector<int64_t> sizes_to_check(const graph::VaryingDimension& d, bool exact_only) {
  if (exact_only) return d.buckets;
  std::vector<int64_t> sizes = {d.min};
  for (size_t i = 0; i + 1 < d.buckets.size() && sizes.size() < 2; ++i)
    if (d.buckets[i] + 1 < d.buckets[i + 1]) sizes.push_back(d.buckets[i] + 1);
  if (sizes.size() < 2 && d.buckets.front() > d.min + 1) sizes.push_back(d.buckets.front() - 1);
  sizes.push_back(d.max);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

void print_outputs(const runtime::VaryingExecutor& ex) {
  for (int i = 0; i < ex.num_outputs(); ++i) {
    const runtime::NDArray out = ex.get_output(i);
    std::string head;
    for (int64_t k = 0; k < out.size() && k < 6; ++k) head += fmt::format(" {:.5f}", out[k]);
    fmt::print("output {} '{}' {}:{}{}\n", i, ex.output_name(i), fmt::join(out.shape(), "x"), head,
               out.size() > 6 ? " ..." : "");
  }
}

}  // namespace

int run_compile_varying(const ModelCommandOptions& o, const graph::ModelOptions& model,
                        const driver::CompileOptions& options, const target::Target& target) {
  const graph::VaryingDimension& dim = *model.varying;
  const auto start = std::chrono::steady_clock::now();
  driver::VaryingBuildResult built = driver::compile_varying(
      [&](int64_t size) { return graph::load_model(o.model, model.at_size(size)); }, dim, target, options);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  fmt::print("{}: {}; {} graphs compiled for {} in {:.1f} s\n", o.model, dim.to_string(), built.buckets.size(),
             target.str(), took.count());
  for (size_t i = 0; i < built.buckets.size(); ++i) {
    const build::BuildResult& b = built.buckets[i];
    const runtime::ExecutableGraph& g = i + 1 == built.buckets.size() ? built.artifact.graph : built.artifact.smaller[i].graph;
    int calls = 0;
    for (const auto& k : b.kernels) calls += k.calls;
    const auto tuned = std::count_if(b.kernels.begin(), b.kernels.end(), [](const auto& k) { return k.tuned; });
    fmt::print("  {} = {}: {} kernels ({} tuned), {} calls, activations {:.2f} MB\n", dim.name, dim.buckets[i],
               b.kernels.size(), tuned, calls, runtime::plan_memory(g).activation_bytes / 1e6);
  }
  // As stored: 2 bytes an element in half storage (--dtype float16).
  double weights = 0, own = 0;
  const runtime::ExecutableGraph& largest = built.artifact.graph;
  for (size_t i = 0; i < built.artifact.params.size(); ++i)
    weights += static_cast<double>(built.artifact.params[i].size() * largest.element_bytes(largest.constants[i]));
  for (const auto& b : built.artifact.smaller)
    for (size_t c = 0, k = 0; c < b.shared.size(); ++c)
      if (b.shared[c] < 0) own += static_cast<double>(b.own.at(k++).size() * b.graph.element_bytes(b.graph.constants[c]));
  fmt::print("weights: {:.2f} MB, stored once; the smaller buckets add {:.2f} MB of constants of their own\n",
             weights / 1e6, own / 1e6);
  const runtime::VaryingShapes& v = *built.artifact.varying;
  if (v.masked) fmt::print("padded keys are masked out of every softmax and attention over {}\n", dim.name);
  if (!v.exact_only.empty())
    fmt::print("runs at the listed sizes only: padding would change the result ({})\n", v.exact_only);
  runtime::write_artifact(built.artifact, o.output);
  fmt::print("wrote {}\n", o.output);
  if (!o.check) return 0;

  target::require_runnable_here(target);
  runtime::VaryingExecutor ex = runtime::VaryingExecutor::load(o.output);
  runtime::set_num_threads(target.threads);
  bool correct = true;
  const double tolerance = measure::network_tolerance(largest);
  for (int64_t n : sizes_to_check(dim, !ex.varying().exact_only.empty())) {
    std::vector<runtime::NDArray> inputs;
    for (int i = 0; i < ex.num_inputs(); ++i) {
      inputs.push_back(ex.random_input(i, n, 42 + static_cast<uint64_t>(i)));
      ex.set_input(i, inputs.back());
    }
    ex.run();
    const auto want = graph::interpret(graph::load_model(o.model, model.at_size(n)), inputs);
    const std::string prefix = fmt::format("{} = {} (bucket {}): ", dim.name, n, ex.bucket());
    for (int i = 0; i < ex.num_outputs(); ++i)
      correct &= check_output(prefix, ex.output_name(i), ex.get_output(i), want.at(i), tolerance);
  }
  return correct ? 0 : 1;
}

int run_varying_model(const ModelCommandOptions& o, runtime::Artifact artifact) {
  runtime::VaryingExecutor ex(std::move(artifact), o.model);
  ex.set_threads(o.threads);
  // Inputs not given are seeded random at the size the given ones have (the largest when none is given).
  std::vector<std::optional<runtime::NDArray>> given(static_cast<size_t>(ex.num_inputs()));
  for (size_t i = 0; i < o.inputs.size(); ++i) {
    const std::string& spec = o.inputs[i];
    const size_t eq = spec.find('=');
    const int index = eq == std::string::npos ? static_cast<int>(i) : ex.input_index(spec.substr(0, eq));
    if (index >= ex.num_inputs())
      throw Error("--input " + spec + ": the model has " + std::to_string(ex.num_inputs()) + " inputs");
    given[static_cast<size_t>(index)] = runtime::read_npy(eq == std::string::npos ? spec : spec.substr(eq + 1));
  }
  int64_t n = ex.varying().max;
  for (int i = 0; i < ex.num_inputs(); ++i) {
    if (!given[static_cast<size_t>(i)]) continue;
    ex.set_input(i, *given[static_cast<size_t>(i)]);
    if (const int64_t size = ex.size_in(i, *given[static_cast<size_t>(i)]); size > 0) n = size;
  }
  for (int i = 0; i < ex.num_inputs(); ++i)
    if (!given[static_cast<size_t>(i)]) ex.set_input(i, ex.random_input(i, n, 42 + static_cast<uint64_t>(i)));
  ex.run();
  fmt::print("{} = {} (bucket {})\n", ex.varying().name, ex.size(), ex.bucket());
  print_outputs(ex);
  if (!o.output.empty()) {
    runtime::write_npy(ex.get_output(0), o.output);
    fmt::print("wrote {}\n", o.output);
  }
  return 0;
}

int run_varying_bench(const ModelCommandOptions& o, runtime::Artifact artifact) {
  runtime::VaryingExecutor ex(std::move(artifact), o.model);
  ex.set_threads(o.threads);
  int threads = o.threads;
  if (threads == 0)
    if (auto at = ex.target().find("-threads="); at != std::string::npos) threads = std::atoi(ex.target().c_str() + at + 9);
  threads = resolve_threads(threads);
  runtime::set_num_threads(threads);
  const runtime::VaryingShapes& v = ex.varying();
  const std::vector<int64_t> sizes = o.sizes.empty() ? v.buckets : o.sizes;
  for (int64_t n : sizes) {
    if (n < v.min || n > v.max)
      throw Error("--sizes: " + std::to_string(n) + " is outside " + v.name + "'s range " + std::to_string(v.min) +
                  ".." + std::to_string(v.max));
    ex.set_random_inputs(n);
    const runtime::BenchmarkResult r = ex.benchmark(o.number, o.repeat);
    const std::string where = ex.on_gpu() ? ex.gpu_executor(ex.bucket()).device_name()
                                          : fmt::format("{} threads", threads);
    fmt::print("{} ({} = {}, bucket {}, {}): min {:.2f} ms, median {:.2f} ms\n", o.model, v.name, n, ex.bucket(),
               where, r.min() * 1e3, r.median() * 1e3);
  }
  return 0;
}

}  // namespace tessera::cli
