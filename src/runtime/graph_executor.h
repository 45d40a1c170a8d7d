#pragma once
// Runs a compiled model: inputs in, kernel calls in order, outputs out. Every
// buffer is placed once by the static memory plan; a run allocates nothing.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/artifact.h"
#include "runtime/huge_page_buffer.h"
#include "runtime/kernel_library.h"
#include "runtime/memory_plan.h"
#include "runtime/ndarray.h"

namespace tessera::runtime {

struct BenchmarkResult {
  std::vector<double> seconds;  // per repeat: the mean time of one run
  double mean() const;
  double std_dev() const;
  double min() const;
  double median() const;
  // "Mean inference time (std dev): 3.16 ms (0.03 ms)"
  std::string summary() const;
};

// Calls `run` at least once, for at least 0.1 s.
void warm_up(const std::function<void()>& run);
// `repeat` measurements, each the mean of `number` calls of `run`, after
// warm_up.
BenchmarkResult benchmark_runs(const std::function<void()>& run, int number, int repeat);

// A seeded stand-in for an input the user gives none of: floats in [-1, 1),
// or for an integer input 0s and 1s (a valid token id, token type and mask
// for any vocabulary). The same seed gives the same values.
NDArray seeded_input(const std::vector<int64_t>& shape, bool integer, uint64_t seed);

class GraphExecutor {
 public:
  // Throws tessera::Error naming `path` when it is not a loadable artifact.
  // `keep_every_tensor`: every intermediate tensor keeps its own memory,
  // which tensor_value then reads after a run (more memory; for checks).
  static GraphExecutor load(const std::string& path, bool keep_every_tensor = false);
  GraphExecutor(Artifact artifact, const std::string& source, bool keep_every_tensor = false);
  // Weights shared with other executors (the buckets of a varying artifact):
  // the kernels read `weights` (one per graph constant, each of its size;
  // artifact.params is empty) where they lie, in memory `owner` keeps alive.
  GraphExecutor(Artifact artifact, std::vector<const float*> weights, std::shared_ptr<const void> owner,
                const std::string& source, bool keep_every_tensor = false);

  int num_inputs() const { return static_cast<int>(graph_.inputs.size()); }
  int num_outputs() const { return static_cast<int>(graph_.outputs.size()); }
  const std::string& input_name(int index) const;
  const std::string& output_name(int index) const;
  const std::vector<int64_t>& input_shape(int index) const;
  const std::vector<int64_t>& output_shape(int index) const;
  int input_index(const std::string& name) const;  // throws listing the inputs
  bool has_input(const std::string& name) const;
  int output_index(const std::string& name) const;
  // Whether the input takes integers (token ids): set_input checks each value is one.
  bool input_is_integer(int index) const;
  // seeded_input for input `index`.
  NDArray random_input(int index, uint64_t seed = 42) const;
  // Every input set to random_input(i, seed + i).
  void set_random_inputs(uint64_t seed = 42);

  // The value must have the input's shape.
  void set_input(int index, const NDArray& value);
  void set_input(const std::string& name, const NDArray& value) { set_input(input_index(name), value); }
  // Zero copy: the kernels read input `index` straight from `data` (the
  // input's size, contiguous) until unbind_inputs() or a set_input of it.
  // `data` must stay alive and unchanged through run().
  void bind_input(int index, const float* data);
  void unbind_inputs();
  // Runs every kernel; with as many threads as the target states (its
  // schedules were chosen for that many), else the thread pool's count.
  void run();
  // Runs use `threads` threads from now on (0: the target's count again).
  void set_threads(int threads);
  int threads() const { return threads_; }
  NDArray get_output(int index) const;
  // Zero copy: output `index` in the executor's memory, valid until the next run().
  const float* output_data(int index) const;
  NDArray get_output(const std::string& name) const { return get_output(output_index(name)); }
  // The value of graph tensor `name` after a run, as floats (a quantized
  // tensor's integers converted); none when the graph has no such tensor.
  // An intermediate tensor needs keep_every_tensor (else its memory may hold
  // a later tensor): throws tessera::Error without it.
  std::optional<NDArray> tensor_value(const std::string& name) const;

  // `repeat` measurements, each the mean of `number` runs, after warm-up runs
  // (at least one, for at least 0.1 s).
  BenchmarkResult benchmark(int number = 10, int repeat = 3);

  // Seconds per call of each kernel call (graph().calls order): the fastest
  // of `runs` runs of the whole graph, after one warm-up run (the minimum,
  // as the benchmarks quote: a neighbour's burst lengthens a call, never
  // shortens it). A VTA call's seconds are its simulated cycles at the
  // configuration's clock (accelerator_stats), the same every run.
  std::vector<double> profile(int runs = 10);

  // A model compiled for "vta": the accelerator's statistics of each call in
  // the last run (graph().calls order; all zero for a CPU call). Its time is
  // the simulated cycles (config().seconds), not the host's, which simulates.
  bool has_accelerator() const { return vta_.has_value(); }
  const std::vector<vta::SimulationStats>& accelerator_stats() const { return accelerator_stats_; }
  bool is_accelerator_call(size_t call) const { return calls_.at(call).accelerator_kernel >= 0; }
  const vta::VtaConfig& accelerator_config() const { return vta_.value().config(); }

  const std::string& target() const { return target_; }
  const MemoryPlan& memory_plan() const { return plan_; }
  const ExecutableGraph& graph() const { return graph_; }

 private:
  float* tensor_data(int tensor) const;

  std::string source_, target_;
  bool keep_every_tensor_ = false;
  int threads_ = 0;  // runs use that many; 0: the pool as it is
  int target_threads_ = 0;  // the target's "-threads=N"
  ExecutableGraph graph_;
  KernelLibrary library_;
  MemoryPlan plan_;
  // The weights, in the order the calls first read them, then the arena of
  // the memory plan: one block, in huge pages where the system allows.
  HugePageBuffer memory_;
  std::vector<float*> constant_data_;  // per tensor; null unless a constant
  std::shared_ptr<const void> shared_weights_;  // the memory of weights read in place, if given so
  float* arena_ = nullptr;
  struct BoundCall {
    Kernel kernel;
    std::vector<void*> args;
    int accelerator_kernel = -1;  // the VTA program it runs instead of `kernel`
  };
  std::optional<VtaDevice> vta_;
  std::vector<vta::SimulationStats> accelerator_stats_;
  void call(size_t index);
  std::vector<BoundCall> calls_;
  // Per input, the (call, argument) positions that read it: what bind_input rebinds.
  std::vector<std::vector<std::pair<size_t, size_t>>> input_uses_;
  // Per input, the caller's memory while bound, else null.
  std::vector<const float*> bound_;
  // (output, input) pairs where the output is the input's bytes (Identity, or
  // a view such as Reshape): no kernel writes them, so run() copies a bound
  // input into its own buffer for the output to read.
  std::vector<std::pair<int, int>> outputs_of_inputs_;
  void point_input_at(int index, void* data);
  // Each call's argument pointers, once constants and the arena are placed.
  void bind_calls();
  // Throws unless the call's buffers are as many and as large as its kernel's signature says.
  void check_call(const ExecutableGraph::Call& call, int accelerator_kernel) const;
};

}  // namespace tessera::runtime
