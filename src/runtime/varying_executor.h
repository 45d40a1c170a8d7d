#pragma once
// Runs an artifact compiled over a range of one dimension
// (Artifact::varying, graph/varying_dimension.h). A run takes inputs of any
// size n in the range, pads them to the smallest bucket that holds n (the
// padded positions repeat the last valid one, so they compute finite
// values), sets the mask of padded keys, runs that bucket's graph, and
// returns the outputs cut back to n. Each bucket's GraphExecutor is made on
// its first use; all of them read one copy of the weights. An artifact for a
// GPU target runs each bucket on a GpuGraphExecutor instead (its weights
// uploaded from that copy when the bucket first runs).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/artifact.h"
#include "runtime/gpu_graph_executor.h"
#include "runtime/graph_executor.h"
#include "runtime/huge_page_buffer.h"

namespace tessera::runtime {

class VaryingExecutor {
 public:
  // Throws tessera::Error naming `path` when it is no loadable artifact or
  // was compiled for fixed shapes.
  static VaryingExecutor load(const std::string& path);
  VaryingExecutor(Artifact artifact, const std::string& source);

  const VaryingShapes& varying() const { return varying_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  const std::string& input_name(int index) const;
  const std::string& output_name(int index) const;
  int input_index(const std::string& name) const;  // throws listing the inputs
  bool input_is_integer(int index) const;
  // Input `index`'s shape when the dimension is n.
  std::vector<int64_t> input_shape(int index, int64_t n) const;
  // GraphExecutor::random_input's values, at size n.
  NDArray random_input(int index, int64_t n, uint64_t seed = 42) const;
  void set_random_inputs(int64_t n, uint64_t seed = 42);

  // Any size in the range: the value's fixed axes must match the model's,
  // its varying ones give the size (the same for every input, checked at run).
  void set_input(int index, const NDArray& value);
  // The size of the dimension `value` has as input `index` (0 for a fixed
  // input); throws naming the input when it is out of the range.
  int64_t size_in(int index, const NDArray& value) const;
  void set_input(const std::string& name, const NDArray& value) { set_input(input_index(name), value); }
  void run();
  NDArray get_output(int index) const;  // the last run's, at its size
  NDArray get_output(const std::string& name) const;
  int64_t size() const { return size_; }      // the dimension in the last run
  int64_t bucket() const { return bucket_; }  // the bucket that ran it

  void set_threads(int threads);
  // GraphExecutor::benchmark of run() with the inputs as set: padding included.
  BenchmarkResult benchmark(int number = 10, int repeat = 3);
  // The executor of one bucket (made on first use); throws for a GPU
  // artifact, whose buckets run on gpu_executor.
  GraphExecutor& executor(int64_t bucket);
  GpuGraphExecutor& gpu_executor(int64_t bucket);
  bool on_gpu() const { return on_gpu_; }
  const std::string& target() const { return target_; }

 private:
  struct Bucket {
    int64_t size = 0;
    ExecutableGraph graph;
    std::string shared_object;
    std::vector<const float*> weights;  // per constant, in weights_
    std::unique_ptr<GraphExecutor> executor;
    std::optional<GpuCode> gpu;  // a GPU artifact's kernels, run by gpu_executor
    std::unique_ptr<GpuGraphExecutor> gpu_executor;
  };
  struct Input {
    std::string name;
    std::vector<int64_t> shape;  // at the largest bucket
    bool integer = false;
    VaryingShapes::Axes axes;
  };

  // The smallest bucket that holds size n; `to_run`: throws unless it is n
  // when only the buckets' own sizes run (exact_only).
  const Bucket& bucket_for(int64_t n, bool to_run) const;
  Bucket& bucket_of_size(int64_t size);
  // A run of the chosen bucket at size n, on the host or on the GPU.
  void run_on_host(const Bucket& chosen, int64_t n);
  void run_on_gpu(const Bucket& chosen, int64_t n);
  NDArray padding_mask(const Bucket& chosen, int64_t n) const;

  std::string source_, target_;
  std::vector<std::string> instruction_sets_;
  VaryingShapes varying_;
  // Every bucket's weights in one block of huge pages, as a GraphExecutor
  // holds its own: the largest bucket's, then the smaller ones' own.
  std::shared_ptr<const HugePageBuffer> weights_;
  std::vector<Bucket> buckets_;  // increasing size
  std::vector<Input> inputs_;
  std::vector<std::string> outputs_;
  // Each input as set, padded to the bucket of its own size (0: a fixed input).
  struct Given {
    NDArray padded;
    int64_t size = 0;
  };
  std::vector<std::optional<Given>> given_;
  int threads_ = 0;
  int64_t size_ = 0, bucket_ = 0;
  bool on_gpu_ = false;
  GraphExecutor* last_ = nullptr;          // the last run's, on the host
  GpuGraphExecutor* last_gpu_ = nullptr;   // or on the GPU
};

}  // namespace tessera::runtime
