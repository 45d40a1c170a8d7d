#pragma once
// One measurement of one compiled kernel under the runner protocol: load the
// object in a forked child, run it once, compare with the expected output,
// then time it (number, repeat, min_repeat_ms, cache flush). A crash, an
// abort or a hang costs that measurement only. LocalRunner measures through
// it, and so does the RPC server, which has no ComputeDAG: only the shapes of
// the arguments and the expected output the client sent.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "measure/kernel_args.h"
#include "measure/measure_input.h"
#include "runtime/kernel_library.h"
#include "runtime/ndarray.h"

namespace tessera::measure {

struct LocalRunnerOptions {
  int number = 1;
  int repeat = 3;
  int min_repeat_ms = 0;
  double timeout = 10;               // seconds per candidate, for the whole child
  // Cold caches: the CPU caches of the arguments flushed before each
  // measurement; on a GPU target its L2, before each run.
  bool enable_cpu_cache_flush = false;
  bool check_correctness = false;    // compare outputs with the reference
  // Without a reference (a network's tasks have none of their own): GPU
  // candidates checked against the host's (measure/host_reference.h).
  bool check_gpu_against_host = false;
  double tolerance = kDefaultTolerance;  // of compare_output
  int num_threads = 0;               // threads of parallel loops; 0 = number of cores
  std::vector<int> cores;            // CPUs the child may run on; empty: any
};

// Refuses options that would make every result empty or fail (tessera::Error
// naming the option): the caller's mistake, not a candidate's.
void check_runner_options(const LocalRunnerOptions& options);

// What a kernel runs on: inputs made from their shapes and input_seed (so a
// remote machine makes the same values), the outputs' shapes, and the first
// output's expected values when the run is checked.
struct KernelArguments {
  std::vector<runtime::NDArray> inputs;
  std::vector<std::vector<int64_t>> output_shapes;
  // Half storage (ir::DType::Float16): which inputs the device holds in
  // half precision (their values here already rounded to it), and whether
  // the outputs are; a GPU child converts on the way in and out.
  std::vector<bool> half_inputs;
  bool half_outputs = false;
  std::optional<runtime::NDArray> expected;
  std::string expected_error;  // why there is no expected output although one was asked for
};

KernelArguments make_kernel_arguments(const std::vector<std::vector<int64_t>>& input_shapes,
                                      const std::vector<std::vector<int64_t>>& output_shapes);

// A kernel loaded into the (child) process; `holder` keeps its code mapped.
struct LoadedKernel {
  std::shared_ptr<void> holder;
  runtime::Kernel kernel = nullptr;
};
// Loads `function` from a file's bytes; throws tessera::Error.
using KernelLoader = std::function<LoadedKernel(const std::string& bytes, const std::string& function)>;

// True for the bytes of an ELF shared object (ET_DYN), which the runtime's
// dynamic loader can load without LLVM.
bool is_shared_object(const std::string& bytes);

// Measures `function` of the kernel file at `object_path` in a child process
// on `arguments` (the child gets copy-on-write copies: a kernel scribbling
// over its inputs cannot disturb the next one). With check, a missing or
// different output is an error result. `in_child` runs in the child just
// before the kernel (tests make it crash or hang there). Fills costs or error;
// all_cost and timestamp are the caller's. A shared object is loaded by the
// runtime (runtime::KernelLibrary); any other file by `load_object` (a
// relocatable object needs codegen's linker, which the RPC server lacks), or
// it is an error result.
MeasureResult run_isolated(const std::string& object_path, const std::string& function,
                           const KernelArguments& arguments, const LocalRunnerOptions& options, bool check,
                           const KernelLoader& load_object = nullptr, const std::function<void()>& in_child = nullptr);

// GPU candidates measured one after another by a child that stays: the
// device's driver starts once per child, not once per candidate (cuInit and a
// context take longer than most candidates' runs), and the arguments stay
// the parent's copy-on-write pages. A candidate that crashes, hangs (past
// options.timeout from the previous report) or fails on the device gets that
// error and ends its child (a CUDA fault poisons the context); a fresh child
// goes on from the next. Each result's all_cost is its wait in the parent,
// without the build. `in_child(k)` runs in the child before candidate k's
// kernel (tests make it crash or hang there).
struct GpuJob {
  std::string object_path;  // a GPU build (runtime::GpuCode)
  std::string function;
  const KernelArguments* arguments = nullptr;
  // The check's least tolerance, above the options' where the candidate
  // rounds by design: kHalfStorageTolerance for TF32 products (tf32_tolerance).
  double tolerance = 0;
};
std::vector<MeasureResult> run_gpu_batch(const std::vector<GpuJob>& jobs, const LocalRunnerOptions& options, bool check,
                                         const std::function<void(size_t)>& in_child = nullptr);

}  // namespace tessera::measure
