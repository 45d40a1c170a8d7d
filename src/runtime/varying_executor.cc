#include "runtime/varying_executor.h"

#include <algorithm>
#include <cstring>

#include "runtime/memory_plan.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::runtime {
namespace {

// `from` copied into an array of shape `to`, element (c0, c1, ...) of the
// result taking element (min(c0, from0 - 1), ...) of `from`: a cut where
// `to` is smaller, the last position repeated where it is larger.
NDArray reshaped_copy(const NDArray& from, const std::vector<int64_t>& to) {
  NDArray out(to);
  const std::vector<int64_t>& shape = from.shape();
  const size_t rank = to.size();
  if (rank == 0 || out.size() == 0) return out;
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) stride[d] = stride[d + 1] * shape[d + 1];
  // Rows of the last axis at a time.
  const int64_t row = to[rank - 1], have = std::min(row, shape[rank - 1]);
  std::vector<int64_t> coord(rank, 0);
  for (int64_t start = 0; start < out.size(); start += row) {
    int64_t source = 0;
    for (size_t d = 0; d + 1 < rank; ++d) source += std::min(coord[d], shape[d] - 1) * stride[d];
    float* dst = out.data() + start;
    std::memcpy(dst, from.data() + source, static_cast<size_t>(have) * sizeof(float));
    std::fill(dst + have, dst + row, from.data()[source + have - 1]);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++coord[d] < to[d]) break;
      coord[d] = 0;
    }
  }
  return out;
}

std::vector<int64_t> at_size(std::vector<int64_t> shape, const VaryingShapes::Axes& axes, int64_t n) {
  for (const auto& [axis, factor] : axes) shape[static_cast<size_t>(axis)] = factor * n;
  return shape;
}

}  // namespace

VaryingExecutor VaryingExecutor::load(const std::string& path) { return VaryingExecutor(read_artifact(path), path); }

VaryingExecutor::VaryingExecutor(Artifact artifact, const std::string& source)
    : source_(source), target_(artifact.target), instruction_sets_(artifact.instruction_sets) {
  if (!artifact.varying)
    throw Error(source_ + " was compiled for fixed shapes (no dimension varies in it); run it as it is");
  varying_ = *artifact.varying;
  on_gpu_ = artifact.gpu.has_value();
  int64_t bytes = 0;
  for (const NDArray& p : artifact.params) bytes += MemoryPlan::aligned(p.size() * static_cast<int64_t>(sizeof(float)));
  for (const ArtifactBucket& b : artifact.smaller)
    for (const NDArray& p : b.own) bytes += MemoryPlan::aligned(p.size() * static_cast<int64_t>(sizeof(float)));
  auto block = std::make_shared<HugePageBuffer>(static_cast<size_t>(bytes), source_.c_str());
  char* next = block->data();
  // Each array is freed once it is in place: the weights are held once, not twice.
  auto place = [&](NDArray& p) {
    const float* at = reinterpret_cast<const float*>(next);
    std::memcpy(next, p.data(), static_cast<size_t>(p.size()) * sizeof(float));
    next += MemoryPlan::aligned(p.size() * static_cast<int64_t>(sizeof(float)));
    p = NDArray();
    return at;
  };
  std::vector<const float*> largest_weights;
  for (NDArray& p : artifact.params) largest_weights.push_back(place(p));
  for (ArtifactBucket& b : artifact.smaller) {
    Bucket bucket{b.size, std::move(b.graph), std::move(b.shared_object), {}, nullptr, std::move(b.gpu), nullptr};
    size_t own = 0;
    for (int shared : b.shared)
      bucket.weights.push_back(shared >= 0 ? largest_weights.at(static_cast<size_t>(shared)) : place(b.own.at(own++)));
    buckets_.push_back(std::move(bucket));
  }
  buckets_.push_back(Bucket{varying_.max, std::move(artifact.graph), std::move(artifact.shared_object),
                            std::move(largest_weights), nullptr, std::move(artifact.gpu), nullptr});
  for (const Bucket& b : buckets_)
    if (b.gpu.has_value() != on_gpu_)
      throw Error(source_ + ": bucket " + std::to_string(b.size) + " and the largest disagree on GPU code");
  weights_ = std::move(block);

  const ExecutableGraph& largest = buckets_.back().graph;
  for (int t : largest.inputs) {
    const auto& tensor = largest.tensors[t];
    if (tensor.name == kPaddingMaskInput) continue;
    Input in{tensor.name, tensor.shape, tensor.integer, {}};
    if (auto it = varying_.inputs.find(tensor.name); it != varying_.inputs.end()) in.axes = it->second;
    for (const auto& [axis, factor] : in.axes)
      if (axis < 0 || static_cast<size_t>(axis) >= in.shape.size() || in.shape[axis] != factor * varying_.max)
        throw Error(source_ + ": input " + support::quoted(in.name) + " does not vary along axis " +
                    std::to_string(axis) + " as its graph says");
    inputs_.push_back(std::move(in));
  }
  for (int t : largest.outputs) outputs_.push_back(largest.tensors[t].name);
  if (varying_.outputs.size() != outputs_.size())
    throw Error(source_ + ": " + std::to_string(varying_.outputs.size()) + " varying outputs described for " +
                std::to_string(outputs_.size()) + " outputs");
  given_.resize(inputs_.size());
}

const std::string& VaryingExecutor::input_name(int index) const { return inputs_.at(static_cast<size_t>(index)).name; }
const std::string& VaryingExecutor::output_name(int index) const { return outputs_.at(static_cast<size_t>(index)); }
bool VaryingExecutor::input_is_integer(int index) const { return inputs_.at(static_cast<size_t>(index)).integer; }

int VaryingExecutor::input_index(const std::string& name) const {
  std::string names;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i].name == name) return static_cast<int>(i);
    names += (i ? ", " : "") + support::quoted(inputs_[i].name);
  }
  throw Error("the model has no input " + support::quoted(name) + " (its inputs: " + names + ")");
}

std::vector<int64_t> VaryingExecutor::input_shape(int index, int64_t n) const {
  const Input& in = inputs_.at(static_cast<size_t>(index));
  return at_size(in.shape, in.axes, n);
}

NDArray VaryingExecutor::random_input(int index, int64_t n, uint64_t seed) const {
  return seeded_input(input_shape(index, n), input_is_integer(index), seed);
}

void VaryingExecutor::set_random_inputs(int64_t n, uint64_t seed) {
  for (int i = 0; i < num_inputs(); ++i) set_input(i, random_input(i, n, seed + static_cast<uint64_t>(i)));
}

int64_t VaryingExecutor::size_in(int index, const NDArray& value) const {
  if (index < 0 || index >= num_inputs())
    throw Error("input index " + std::to_string(index) + " is out of range: the model has " +
                std::to_string(num_inputs()));
  const Input& in = inputs_.at(static_cast<size_t>(index));
  const std::vector<int64_t>& shape = value.shape();
  auto refuse = [&](const std::string& why) {
    throw Error("input " + support::quoted(in.name) + " has shape " + shape_text(shape) + "; the model takes " +
                shape_text(in.shape) + " with " + varying_.name + " in " + std::to_string(varying_.min) + ".." +
                std::to_string(varying_.max) + (why.empty() ? "" : " (" + why + ")"));
  };
  if (shape.size() != in.shape.size()) refuse("");
  int64_t n = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    auto it = in.axes.find(static_cast<int>(d));
    if (it == in.axes.end()) {
      if (shape[d] != in.shape[d]) refuse("axis " + std::to_string(d) + " is fixed");
      continue;
    }
    if (shape[d] % it->second != 0 || (n != 0 && shape[d] / it->second != n))
      refuse("axis " + std::to_string(d) + " holds " + std::to_string(it->second) + " per unit of " + varying_.name);
    n = shape[d] / it->second;
  }
  if (!in.axes.empty() && (n < varying_.min || n > varying_.max))
    refuse(varying_.name + " = " + std::to_string(n) + " is out of the range");
  return n;
}

const VaryingExecutor::Bucket& VaryingExecutor::bucket_for(int64_t n, bool to_run) const {
  const Bucket& chosen = *std::find_if(buckets_.begin(), buckets_.end(), [&](const Bucket& b) { return b.size >= n; });
  if (to_run && !varying_.exact_only.empty() && chosen.size != n) {
    std::string sizes;
    for (const Bucket& b : buckets_) sizes += (sizes.empty() ? "" : ", ") + std::to_string(b.size);
    throw Error(source_ + ": " + varying_.name + " = " + std::to_string(n) + " is not one of the sizes compiled (" +
                sizes + "); padding it would change the result (" + varying_.exact_only + ")");
  }
  return chosen;
}

void VaryingExecutor::set_input(int index, const NDArray& value) {
  const int64_t n = size_in(index, value);  // in range, or an error naming the input
  const Input& in = inputs_[static_cast<size_t>(index)];
  // Padded to its bucket now: the run reads it in place.
  const std::vector<int64_t> shape =
      n == 0 ? value.shape() : at_size(in.shape, in.axes, bucket_for(n, /*to_run=*/false).size);
  given_[static_cast<size_t>(index)] = Given{reshaped_copy(value, shape), n};
}

VaryingExecutor::Bucket& VaryingExecutor::bucket_of_size(int64_t size) {
  for (Bucket& b : buckets_)
    if (b.size == size) return b;
  throw Error(source_ + " has no bucket of size " + std::to_string(size));
}

GraphExecutor& VaryingExecutor::executor(int64_t size) {
  if (on_gpu_) throw Error(source_ + " runs on a GPU (target '" + target_ + "'): its buckets are GpuGraphExecutors");
  Bucket& b = bucket_of_size(size);
  if (!b.executor) {
    Artifact a;
    a.target = target_;
    a.instruction_sets = instruction_sets_;
    a.graph = b.graph;
    a.shared_object = b.shared_object;
    b.executor = std::make_unique<GraphExecutor>(std::move(a), b.weights, weights_,
                                                 source_ + " (bucket " + std::to_string(size) + ")");
    b.executor->set_threads(threads_);
  }
  return *b.executor;
}

GpuGraphExecutor& VaryingExecutor::gpu_executor(int64_t size) {
  if (!on_gpu_) throw Error(source_ + " runs on the host (target '" + target_ + "'), not on a GPU");
  Bucket& b = bucket_of_size(size);
  if (!b.gpu_executor) {
    Artifact a;
    a.target = target_;
    a.graph = b.graph;
    a.gpu = b.gpu;
    b.gpu_executor =
        std::make_unique<GpuGraphExecutor>(std::move(a), b.weights, source_ + " (bucket " + std::to_string(size) + ")");
  }
  return *b.gpu_executor;
}

NDArray VaryingExecutor::padding_mask(const Bucket& chosen, int64_t n) const {
  NDArray mask({chosen.size});
  for (int64_t j = n; j < chosen.size; ++j) mask[j] = kPaddedKey;
  return mask;
}

void VaryingExecutor::run() {
  int64_t n = 0;
  std::string first;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!given_[i]) throw Error("input " + support::quoted(inputs_[i].name) + " is not set");
    const int64_t m = given_[i]->size;
    if (m == 0) continue;  // a fixed input
    if (n != 0 && m != n)
      throw Error("input " + support::quoted(inputs_[i].name) + " has " + varying_.name + " = " + std::to_string(m) +
                  ", input " + support::quoted(first) + " has " + std::to_string(n) + ": they must agree");
    if (n == 0) first = inputs_[i].name;
    n = m;
  }
  if (n == 0) n = varying_.max;  // no input varies: the largest bucket
  const Bucket& chosen = bucket_for(n, /*to_run=*/true);
  if (on_gpu_) run_on_gpu(chosen, n);
  else run_on_host(chosen, n);
  size_ = n;
  bucket_ = chosen.size;
}

void VaryingExecutor::run_on_host(const Bucket& chosen, int64_t n) {
  GraphExecutor& ex = executor(chosen.size);
  for (size_t i = 0; i < inputs_.size(); ++i)
    ex.bind_input(ex.input_index(inputs_[i].name), given_[i]->padded.data());
  // The smallest bucket is never padded, nor masked.
  if (varying_.masked && ex.has_input(kPaddingMaskInput)) ex.set_input(kPaddingMaskInput, padding_mask(chosen, n));
  ex.run();
  ex.unbind_inputs();  // given_ may change before the next run
  last_ = &ex;
}

void VaryingExecutor::run_on_gpu(const Bucket& chosen, int64_t n) {
  GpuGraphExecutor& ex = gpu_executor(chosen.size);
  for (size_t i = 0; i < inputs_.size(); ++i) ex.set_input(ex.input_index(inputs_[i].name), given_[i]->padded);
  if (varying_.masked && ex.has_input(kPaddingMaskInput))
    ex.set_input(ex.input_index(kPaddingMaskInput), padding_mask(chosen, n));
  ex.run();
  last_gpu_ = &ex;
}

NDArray VaryingExecutor::get_output(int index) const {
  if (!last_ && !last_gpu_) throw Error("get_output before any run");
  const NDArray out = on_gpu_ ? last_gpu_->get_output(last_gpu_->output_index(output_name(index)))
                              : last_->get_output(output_name(index));
  return reshaped_copy(out, at_size(out.shape(), varying_.outputs.at(static_cast<size_t>(index)), size_));
}

NDArray VaryingExecutor::get_output(const std::string& name) const {
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (outputs_[i] == name) return get_output(static_cast<int>(i));
  throw Error("the model has no output " + support::quoted(name));
}

void VaryingExecutor::set_threads(int threads) {
  threads_ = threads;
  for (Bucket& b : buckets_)
    if (b.executor) b.executor->set_threads(threads);
}

BenchmarkResult VaryingExecutor::benchmark(int number, int repeat) {
  return benchmark_runs([this] { run(); }, number, repeat);
}

}  // namespace tessera::runtime
