#pragma once
// Runs a model compiled for a GPU target (artifact.gpu) on its device: the
// weights uploaded once, every other tensor in a device buffer of the static
// memory plan (tensors whose lifetimes do not overlap share one), the graph
// kernels' launches enqueued in order on one queue, recorded on the first run
// as one CUDA graph and replayed from then on. Inputs and outputs cross
// between host and device in set_input and get_output only.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/artifact.h"
#include "runtime/gpu_backend.h"
#include "runtime/graph_executor.h"
#include "runtime/memory_plan.h"

namespace tessera::runtime {

class GpuGraphExecutor {
 public:
  // Throws tessera::Error naming `source` and what cannot run (no GPU code,
  // no device, a kernel the device rejects).
  GpuGraphExecutor(Artifact artifact, const std::string& source);
  // The same with the weights read from `weights` (one per graph constant,
  // of its shape; artifact.params is not read): a VaryingExecutor's bucket,
  // whose weights the buckets share on the host.
  GpuGraphExecutor(Artifact artifact, const std::vector<const float*>& weights, const std::string& source);
  static GpuGraphExecutor load(const std::string& path);

  std::string device_name() const { return backend_->device_name(); }
  const std::string& target() const { return target_; }
  int num_inputs() const { return static_cast<int>(graph_.inputs.size()); }
  int num_outputs() const { return static_cast<int>(graph_.outputs.size()); }
  const std::vector<int64_t>& input_shape(int index) const;
  const std::vector<int64_t>& output_shape(int index) const;
  const std::string& input_name(int index) const;
  const std::string& output_name(int index) const;
  int input_index(const std::string& name) const;  // throws listing the inputs
  bool has_input(const std::string& name) const;
  int output_index(const std::string& name) const;
  bool input_is_integer(int index) const;

  void set_input(int index, const NDArray& value);
  // seeded_input for input `index`, and for every input (seed + its
  // index), as GraphExecutor's.
  NDArray random_input(int index, uint64_t seed) const;
  void set_random_inputs(uint64_t seed = 42);
  void run();
  NDArray get_output(int index) const;
  // The same from and into device memory another library allocated on this
  // device (a framework's CUDA tensor: float32, contiguous, the shape's
  // bytes): copied on the device, never through the host. The output's copy
  // has finished when get_output_into_device returns.
  void set_input_from_device(int index, std::uintptr_t pointer, size_t bytes);
  void get_output_into_device(int index, std::uintptr_t pointer, size_t bytes);
  const std::string& dialect() const { return code_.dialect; }

  // `repeat` measurements, each the mean device time of `number` runs,
  // after warm-up runs.
  BenchmarkResult benchmark(int number = 10, int repeat = 3);
  // Device seconds per call (graph().calls order), the mean of `runs` runs.
  std::vector<double> profile(int runs = 10);
  const ExecutableGraph& graph() const { return graph_; }

 private:
  // What both constructors do: the code loaded, the weights uploaded, the
  // memory plan's buffers allocated.
  void set_up(Artifact artifact, const std::vector<const float*>& weights);
  int buffer_of(int tensor) const;
  void launch_call(size_t call);
  // Every call's launches, replayed as one recorded graph where the backend has them.
  void enqueue_all();

  std::string source_, target_;
  ExecutableGraph graph_;
  GpuCode code_;
  std::unique_ptr<GpuBackend> backend_;
  MemoryPlan plan_;
  std::vector<int> constant_buffer_;          // per tensor: its weights' buffer, or -1
  std::vector<int> storage_buffer_;           // per storage of the plan
  std::map<std::string, std::vector<int>> workspace_;  // per graph kernel: its scratch buffers
  int recorded_ = 0;  // 0: not tried yet; 1: the launches are a recorded graph; -1: none to record
};

}  // namespace tessera::runtime
