#include "runtime/gpu_graph_executor.h"

#include <algorithm>

#include "support/checked_math.h"
#include "support/half.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::runtime {

namespace {

void check_index(int index, size_t count, const char* what) {
  if (index < 0 || static_cast<size_t>(index) >= count)
    throw Error(std::string(what) + " index " + std::to_string(index) + " is out of range: the model has " +
                std::to_string(count));
}

size_t float_bytes(int64_t elements) { return static_cast<size_t>(elements) * sizeof(float); }

}  // namespace

GpuGraphExecutor GpuGraphExecutor::load(const std::string& path) { return GpuGraphExecutor(read_artifact(path), path); }

namespace {

std::vector<const float*> pointers_to(const std::vector<NDArray>& params) {
  std::vector<const float*> p;
  for (const NDArray& w : params) p.push_back(w.data());
  return p;
}

}  // namespace

GpuGraphExecutor::GpuGraphExecutor(Artifact artifact, const std::string& source) : source_(source) {
  const std::vector<NDArray> params = std::move(artifact.params);
  set_up(std::move(artifact), pointers_to(params));
}

GpuGraphExecutor::GpuGraphExecutor(Artifact artifact, const std::vector<const float*>& weights,
                                   const std::string& source)
    : source_(source) {
  set_up(std::move(artifact), weights);
}

void GpuGraphExecutor::set_up(Artifact artifact, const std::vector<const float*>& weights) {
  target_ = std::move(artifact.target);
  graph_ = std::move(artifact.graph);
  if (!artifact.gpu) throw Error(source_ + ": compiled for '" + target_ + "', not for a GPU");
  code_ = std::move(*artifact.gpu);
  graph_.validate();
  for (const auto& call : graph_.calls)
    if (!code_.kernels.count(call.kernel))
      throw Error(source_ + ": the graph calls kernel " + support::quoted(call.kernel) + ", which its GPU code lacks");
  try {
    backend_ = make_gpu_backend(code_.dialect);
    backend_->load(code_);
  } catch (const Error& e) {
    throw Error(source_ + ": " + e.what());
  }
  for (const ExecutableGraph::Tensor& t : graph_.tensors)
    if (!t.stored_as.empty())
      throw Error(source_ + ": tensor " + support::quoted(t.name) + " is stored as " + t.stored_as +
                  ": quantized networks run on CPU targets");
  if (weights.size() != graph_.constants.size())
    throw Error(source_ + ": " + std::to_string(weights.size()) + " params for " +
                std::to_string(graph_.constants.size()) + " constants");
  constant_buffer_.assign(graph_.tensors.size(), -1);
  for (size_t i = 0; i < graph_.constants.size(); ++i) {
    const int t = graph_.constants[i];
    const int64_t elements = support::bounded_product(graph_.tensors[t].shape, "a constant");
    const int b = backend_->allocate(static_cast<size_t>(std::max<int64_t>(elements, 1) * graph_.element_bytes(t)));
    if (graph_.tensors[t].half) {  // --dtype float16: rounded once, on upload
      const std::vector<uint16_t> halves = support::to_halves(weights[i], static_cast<size_t>(elements));
      backend_->write(b, halves.data(), halves.size() * sizeof(uint16_t));
    } else {
      backend_->write(b, weights[i], float_bytes(elements));
    }
    constant_buffer_[t] = b;
  }
  plan_ = plan_memory(graph_);
  for (int64_t bytes : plan_.storage_bytes) storage_buffer_.push_back(backend_->allocate(std::max<int64_t>(bytes, 4)));
  for (const auto& [name, kernel] : code_.kernels)
    for (int64_t elements : kernel.workspace)
      workspace_[name].push_back(backend_->allocate(float_bytes(std::max<int64_t>(elements, 1))));
}

int GpuGraphExecutor::buffer_of(int tensor) const {
  tensor = graph_.storage_root(tensor);
  if (constant_buffer_[tensor] >= 0) return constant_buffer_[tensor];
  return storage_buffer_.at(plan_.storage[tensor]);
}

const std::vector<int64_t>& GpuGraphExecutor::input_shape(int index) const {
  check_index(index, graph_.inputs.size(), "input");
  return graph_.tensors[graph_.inputs[index]].shape;
}

const std::vector<int64_t>& GpuGraphExecutor::output_shape(int index) const {
  check_index(index, graph_.outputs.size(), "output");
  return graph_.tensors[graph_.outputs[index]].shape;
}

const std::string& GpuGraphExecutor::input_name(int index) const {
  check_index(index, graph_.inputs.size(), "input");
  return graph_.tensors[graph_.inputs[index]].name;
}

bool GpuGraphExecutor::input_is_integer(int index) const {
  check_index(index, graph_.inputs.size(), "input");
  return graph_.tensors[graph_.inputs[index]].integer;
}

void GpuGraphExecutor::set_input(int index, const NDArray& value) {
  if (value.shape() != input_shape(index))
    throw Error("input " + support::quoted(input_name(index)) + " has shape " + shape_text(input_shape(index)) +
                ", got " + shape_text(value.shape()));
  backend_->write(buffer_of(graph_.inputs[index]), value.data(), float_bytes(value.size()));
}

int GpuGraphExecutor::input_index(const std::string& name) const {
  std::string names;
  for (int i = 0; i < num_inputs(); ++i) {
    if (input_name(i) == name) return i;
    names += (i ? ", " : "") + support::quoted(input_name(i));
  }
  throw Error("the model has no input " + support::quoted(name) + " (its inputs: " + names + ")");
}

bool GpuGraphExecutor::has_input(const std::string& name) const {
  for (int i = 0; i < num_inputs(); ++i)
    if (input_name(i) == name) return true;
  return false;
}

int GpuGraphExecutor::output_index(const std::string& name) const {
  for (int i = 0; i < num_outputs(); ++i)
    if (output_name(i) == name) return i;
  throw Error("the model has no output " + support::quoted(name));
}

const std::string& GpuGraphExecutor::output_name(int index) const {
  check_index(index, graph_.outputs.size(), "output");
  return graph_.tensors[graph_.outputs[index]].name;
}

namespace {

void check_bytes(const std::string& what, const std::string& name, const std::vector<int64_t>& shape, size_t bytes) {
  const size_t expected = float_bytes(support::bounded_product(shape, what + " " + name));
  if (bytes != expected)
    throw Error(what + " " + support::quoted(name) + " takes " + std::to_string(expected) + " bytes (float32 " +
                shape_text(shape) + "), got " + std::to_string(bytes));
}

}  // namespace

void GpuGraphExecutor::set_input_from_device(int index, std::uintptr_t pointer, size_t bytes) {
  check_bytes("input", input_name(index), input_shape(index), bytes);
  backend_->copy_from_device_pointer(buffer_of(graph_.inputs[index]), pointer, bytes);
}

void GpuGraphExecutor::get_output_into_device(int index, std::uintptr_t pointer, size_t bytes) {
  check_bytes("output", output_name(index), output_shape(index), bytes);
  backend_->copy_to_device_pointer(buffer_of(graph_.outputs[index]), pointer, bytes);
  backend_->finish();
}

NDArray GpuGraphExecutor::random_input(int index, uint64_t seed) const {
  return seeded_input(input_shape(index), input_is_integer(index), seed);
}

void GpuGraphExecutor::set_random_inputs(uint64_t seed) {
  for (int i = 0; i < num_inputs(); ++i) set_input(i, random_input(i, seed + static_cast<uint64_t>(i)));
}

void GpuGraphExecutor::launch_call(size_t i) {
  const ExecutableGraph::Call& call = graph_.calls[i];
  std::vector<int> operands;
  for (int t : call.inputs) operands.push_back(buffer_of(t));
  for (int t : call.outputs) operands.push_back(buffer_of(t));
  const auto& scratch = workspace_[call.kernel];
  operands.insert(operands.end(), scratch.begin(), scratch.end());
  for (const GpuLaunch& l : code_.kernels.at(call.kernel).launches) {
    std::vector<int> args;
    for (int p : l.params) {
      if (p < 0 || static_cast<size_t>(p) >= operands.size())
        throw Error(source_ + ": kernel " + support::quoted(l.name) + " takes buffer " + std::to_string(p) + " of " +
                    std::to_string(operands.size()));
      args.push_back(operands[p]);
    }
    backend_->launch(l, args);
  }
}

void GpuGraphExecutor::enqueue_all() {
  // The first run records every launch into one graph where the backend
  // can (a CUDA graph): at batch 1 a network is launch-bound.
  if (!recorded_) {
    recorded_ = backend_->record([this] {
      for (size_t i = 0; i < graph_.calls.size(); ++i) launch_call(i);
    }) ? 1 : -1;
  }
  if (recorded_ > 0) {
    backend_->replay();
  } else {
    for (size_t i = 0; i < graph_.calls.size(); ++i) launch_call(i);
  }
}

void GpuGraphExecutor::run() {
  enqueue_all();
  backend_->finish();
}

NDArray GpuGraphExecutor::get_output(int index) const {
  NDArray out(output_shape(index));
  backend_->read(buffer_of(graph_.outputs[index]), out.data(), float_bytes(out.size()));
  return out;
}

BenchmarkResult GpuGraphExecutor::benchmark(int number, int repeat) {
  if (number < 1 || repeat < 1) throw Error("benchmark: number and repeat must be at least 1");
  warm_up([this] { run(); });
  BenchmarkResult result;
  for (int r = 0; r < repeat; ++r) {
    backend_->begin_timing();
    for (int n = 0; n < number; ++n) enqueue_all();
    result.seconds.push_back(backend_->finish() / number);
  }
  return result;
}

std::vector<double> GpuGraphExecutor::profile(int runs) {
  if (runs < 1) throw Error("profile: runs must be at least 1");
  run();
  std::vector<double> seconds(graph_.calls.size(), 0.0);
  for (int r = 0; r < runs; ++r)
    for (size_t i = 0; i < graph_.calls.size(); ++i) {
      backend_->begin_timing();
      launch_call(i);
      seconds[i] += backend_->finish() / runs;
    }
  return seconds;
}

}  // namespace tessera::runtime
