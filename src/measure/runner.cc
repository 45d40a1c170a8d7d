#include "measure/runner.h"

#include <algorithm>
#include <chrono>
#include <map>

#include <fmt/format.h>

#include "codegen/module.h"
#include "measure/child_process.h"
#include "measure/host_reference.h"
#include "support/half.h"
#include "tessera/error.h"

namespace tessera::measure {

namespace {

using Clock = ChildProcess::Clock;

// Candidates of one task share the DAG's tensor nodes, so the output nodes identify it cheaply.
using DagKey = std::vector<const ir::TensorNode*>;

DagKey key_of(const ir::ComputeDAG& dag) {
  DagKey key;
  for (const auto& t : dag.outputs()) key.push_back(t.get());
  return key;
}

// A relocatable object (LocalBuilder's), linked into the child by codegen.
LoadedKernel load_relocatable_object(const std::string& bytes, const std::string& function) {
  auto module = std::make_shared<codegen::Module>(codegen::Module::load_object(bytes));
  return {module, module->function(function)};
}

}  // namespace

KernelArguments kernel_arguments_of(const ir::ComputeDAG& dag, const ReferenceFn& reference) {
  KernelArguments a = make_kernel_arguments(tensor_shapes(dag.placeholders()), tensor_shapes(dag.outputs()));
  const auto placeholders = dag.placeholders();
  for (size_t i = 0; i < placeholders.size(); ++i) {
    a.half_inputs.push_back(placeholders[i]->dtype == ir::DType::Float16);
    if (a.half_inputs.back()) support::round_to_halves(a.inputs[i].data(), a.inputs[i].size());  // what the device holds
  }
  a.half_outputs = !dag.outputs().empty() && dag.outputs()[0]->dtype == ir::DType::Float16;
  if (reference && !dag.outputs().empty()) {
    std::vector<const float*> input_ptrs;
    for (const auto& in : a.inputs) input_ptrs.push_back(in.data());
    try {
      runtime::NDArray want(dag.outputs()[0]->shape);
      reference(input_ptrs, want.data());
      a.expected = std::move(want);
    } catch (const std::exception& e) {
      a.expected_error = std::string("reference implementation failed: ") + e.what();
    }
  }
  return a;
}

LocalRunner::LocalRunner(LocalRunnerOptions options, ReferenceFn reference)
    : options_(std::move(options)), reference_(std::move(reference)) {
  check_runner_options(options_);
}

double unix_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::vector<MeasureResult> LocalRunner::run(const std::vector<MeasureInput>& inputs,
                                            const std::vector<BuildResult>& builds) {
  if (inputs.size() != builds.size())
    throw Error(fmt::format("LocalRunner::run: {} inputs but {} build results", inputs.size(),
                            builds.size()));
  const bool check = options_.check_correctness && reference_;
  const bool check_gpu = options_.check_correctness && (reference_ || options_.check_gpu_against_host);
  std::map<DagKey, KernelArguments> prepared;

  std::vector<MeasureResult> results(inputs.size());
  std::vector<GpuJob> gpu_jobs;
  std::vector<size_t> gpu_candidate;  // the index in `inputs` of each GPU job
  for (size_t i = 0; i < inputs.size(); ++i) {
    const BuildResult& build = builds[i];
    MeasureResult& r = results[i];
    if (build.error != ErrorKind::None) {  // nothing to run
      r = result_of_failed_build(build);
      continue;
    }
    const ir::ComputeDAG& dag = inputs[i].dag;
    const double tolerance = tf32_tolerance(inputs[i].target.tf32);  // GpuJob::tolerance
    if (inputs[i].target.is_gpu() && check_gpu && !reference_) {  // measured together below
      gpu_jobs.push_back(GpuJob{build.object_path, build.function_name, &host_checked(dag), tolerance});
      gpu_candidate.push_back(i);
      continue;
    }
    auto key = key_of(dag);
    auto it = prepared.find(key);
    if (it == prepared.end()) it = prepared.emplace(key, kernel_arguments_of(dag, check ? reference_ : nullptr)).first;
    if (inputs[i].target.is_gpu()) {  // measured together below
      gpu_jobs.push_back(GpuJob{build.object_path, build.function_name, &it->second, tolerance});
      gpu_candidate.push_back(i);
      continue;
    }

    // One child at a time: candidates running side by side would disturb each other's timings.
    auto start = Clock::now();
    const auto& hook = fault_hook_;
    r = run_isolated(build.object_path, build.function_name, it->second, options_, check, load_relocatable_object,
                     hook ? std::function<void()>([&hook, i] { hook(static_cast<int>(i)); }) : nullptr);
    r.all_cost = build.time_cost + std::chrono::duration<double>(Clock::now() - start).count();
    r.timestamp = unix_time_now();
  }
  if (gpu_jobs.empty()) return results;
  const auto& hook = fault_hook_;
  std::vector<MeasureResult> measured =
      run_gpu_batch(gpu_jobs, options_, check_gpu,
                    hook ? std::function<void(size_t)>([&](size_t k) { hook(static_cast<int>(gpu_candidate[k])); })
                         : nullptr);
  for (size_t k = 0; k < gpu_jobs.size(); ++k) {
    MeasureResult& r = results[gpu_candidate[k]];
    r = std::move(measured[k]);
    r.all_cost += builds[gpu_candidate[k]].time_cost;
    r.timestamp = unix_time_now();
  }
  return results;
}

const KernelArguments& LocalRunner::host_checked(const ir::ComputeDAG& dag) {
  const std::string key = dag.workload_key();
  auto it = host_checked_.find(key);
  if (it != host_checked_.end()) return it->second;
  ReferenceFn reference;
  std::string why;
  try {
    reference = host_reference(dag);
  } catch (const std::exception& e) {
    why = e.what();
  }
  KernelArguments a = kernel_arguments_of(dag, reference);
  if (!why.empty()) a.expected_error = "the host's reference could not be compiled: " + why;
  return host_checked_.emplace(key, std::move(a)).first->second;
}

MeasureResult result_of_failed_build(const BuildResult& build) {
  MeasureResult r;
  r.error = build.error;
  r.error_message = build.error_message;
  r.all_cost = build.time_cost;
  r.timestamp = unix_time_now();
  return r;
}

std::vector<MeasureResult> measure_batch(Builder& builder, Runner& runner,
                                         const std::vector<MeasureInput>& inputs) {
  return runner.run(inputs, builder.build(inputs));
}

std::vector<std::vector<MeasureResult>> measure_rounds(Builder& builder, Runner& runner,
                                                       const std::vector<MeasureInput>& inputs, int rounds) {
  std::vector<BuildResult> builds = builder.build(inputs);
  std::vector<std::vector<MeasureResult>> results;
  const size_t n = inputs.size();
  for (int round = 0; round < rounds; ++round) {
    std::vector<MeasureInput> order;
    std::vector<BuildResult> order_builds;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (k + static_cast<size_t>(round)) % n;
      order.push_back(inputs[i]);
      order_builds.push_back(builds[i]);
    }
    std::vector<MeasureResult> ran = runner.run(order, order_builds);
    if (ran.size() != n)
      throw Error(fmt::format("measure_rounds: the runner returned {} results for {} inputs", ran.size(), n));
    std::vector<MeasureResult> round_results(n);
    for (size_t k = 0; k < n; ++k) round_results[(k + static_cast<size_t>(round)) % n] = std::move(ran[k]);
    results.push_back(std::move(round_results));
    for (BuildResult& b : builds) b.time_cost = 0;  // the build is paid once
  }
  return results;
}

MeasureResult combine_rounds(const std::vector<std::vector<MeasureResult>>& rounds, size_t i) {
  MeasureResult c;
  for (const auto& round : rounds) {
    const MeasureResult& r = round.at(i);
    c.all_cost += r.all_cost;
    c.timestamp = std::max(c.timestamp, r.timestamp);
    if (c.error != ErrorKind::None) continue;
    if (!r.valid()) {
      c.error = r.error == ErrorKind::None ? ErrorKind::Unknown : r.error;
      c.error_message = "leader re-measurement: " + (r.error_message.empty() ? "no cost" : r.error_message);
      c.costs.clear();
      continue;
    }
    c.costs.push_back(r.min_cost());
  }
  return c;
}

}  // namespace tessera::measure
