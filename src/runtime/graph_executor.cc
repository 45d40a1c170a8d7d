#include "runtime/graph_executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>

#include "runtime/host_cpu.h"
#include "runtime/stored_values.h"
#include "runtime/thread_pool.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::runtime {

namespace {

int index_by_name(const ExecutableGraph& g, const std::vector<int>& ids, const std::string& name, const char* what) {
  std::string names;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (g.tensors[ids[i]].name == name) return static_cast<int>(i);
    names += (i ? ", " : "") + support::quoted(g.tensors[ids[i]].name);
  }
  throw Error(std::string("the model has no ") + what + " " + support::quoted(name) + " (its " + what + "s: " +
              names + ")");
}

void check_index(int index, size_t count, const char* what) {
  if (index < 0 || static_cast<size_t>(index) >= count)
    throw Error(std::string(what) + " index " + std::to_string(index) + " is out of range: the model has " +
                std::to_string(count));
}

}  // namespace

double BenchmarkResult::mean() const {
  if (seconds.empty()) return 0;
  return std::accumulate(seconds.begin(), seconds.end(), 0.0) / seconds.size();
}

double BenchmarkResult::std_dev() const {
  if (seconds.size() < 2) return 0;
  const double m = mean();
  double sum = 0;
  for (double s : seconds) sum += (s - m) * (s - m);
  return std::sqrt(sum / seconds.size());
}

double BenchmarkResult::min() const { return seconds.empty() ? 0 : *std::min_element(seconds.begin(), seconds.end()); }

double BenchmarkResult::median() const {
  if (seconds.empty()) return 0;
  std::vector<double> s = seconds;
  std::sort(s.begin(), s.end());
  return s.size() % 2 ? s[s.size() / 2] : (s[s.size() / 2 - 1] + s[s.size() / 2]) / 2;
}

std::string BenchmarkResult::summary() const {
  char line[128];
  std::snprintf(line, sizeof(line), "Mean inference time (std dev): %.2f ms (%.2f ms)", mean() * 1e3, std_dev() * 1e3);
  return line;
}

GraphExecutor GraphExecutor::load(const std::string& path, bool keep_every_tensor) {
  return GraphExecutor(read_artifact(path), path, keep_every_tensor);
}

GraphExecutor::GraphExecutor(Artifact artifact, const std::string& source, bool keep_every_tensor)
    : GraphExecutor(std::move(artifact), {}, nullptr, source, keep_every_tensor) {}

GraphExecutor::GraphExecutor(Artifact artifact, std::vector<const float*> shared, std::shared_ptr<const void> owner,
                             const std::string& source, bool keep_every_tensor)
    : source_(source),
      keep_every_tensor_(keep_every_tensor),
      target_(std::move(artifact.target)),
      graph_(std::move(artifact.graph)),
      library_(KernelLibrary::from_shared_object(artifact.shared_object, source)) {
  if (artifact.vta) vta_.emplace(std::move(*artifact.vta));
  if (artifact.varying)
    throw Error(source_ + ": compiled for " + artifact.varying->name + " in " + std::to_string(artifact.varying->min) +
                ".." + std::to_string(artifact.varying->max) + ", which runtime::VaryingExecutor runs");
  graph_.validate();
  if (graph_.has_half_tensors())
    throw Error(source_ + ": holds half-precision tensors (compiled with --dtype float16 for a GPU); "
                          "the CPU runtime stores float32");
  if (const auto missing = missing_on_host(artifact.instruction_sets); !missing.empty()) {
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
    throw Error(source_ + ": compiled for '" + target_ + "', whose kernels use " + names +
                ", which this host's CPU lacks; compile the model for this host instead");
  }
  if (auto at = target_.find("-threads="); at != std::string::npos)
    threads_ = std::max(0, std::atoi(target_.c_str() + at + 9));
  target_threads_ = threads_;
  std::vector<NDArray>& params = artifact.params;
  const size_t given = shared.empty() ? params.size() : shared.size();
  if (given != graph_.constants.size() || (!shared.empty() && !params.empty()))
    throw Error(source_ + ": " + std::to_string(given) + " params for " + std::to_string(graph_.constants.size()) +
                " constants");
  plan_ = plan_memory(graph_, keep_every_tensor_);
  constant_data_.assign(graph_.tensors.size(), nullptr);
  if (!shared.empty()) {
    for (size_t i = 0; i < shared.size(); ++i)
      constant_data_[graph_.constants[i]] = const_cast<float*>(shared[i]);  // kernels never write weights
    shared_weights_ = std::move(owner);
    memory_ = HugePageBuffer(static_cast<size_t>(plan_.arena_bytes), source_.c_str());
    arena_ = reinterpret_cast<float*>(memory_.data());
    bind_calls();
    return;
  }
  std::vector<NDArray*> param_of(graph_.tensors.size(), nullptr);
  for (size_t i = 0; i < params.size(); ++i) param_of[graph_.constants[i]] = &params[i];

  // Constants in the order the calls first read them, so that the weights of
  // consecutive kernels are neighbours; any a call never reads go last.
  std::vector<int> constant_order;
  std::vector<bool> placed(graph_.tensors.size(), false);
  auto place = [&](int t) {
    t = graph_.storage_root(t);
    if (param_of[t] && !placed[t]) {
      placed[t] = true;
      constant_order.push_back(t);
    }
  };
  for (const auto& call : graph_.calls)
    for (int t : call.inputs) place(t);
  for (int t : graph_.constants) place(t);

  auto stored_bytes = [](const NDArray& a) {
    return MemoryPlan::aligned(a.size() * static_cast<int64_t>(sizeof(float)));
  };
  int64_t constant_bytes = 0;
  for (int t : constant_order) constant_bytes += stored_bytes(*param_of[t]);
  memory_ = HugePageBuffer(static_cast<size_t>(constant_bytes + plan_.arena_bytes), source_.c_str());
  char* next = memory_.data();
  // Each weight is freed once it is in place: loading holds the model's
  // weights once, not twice.
  for (int t : constant_order) {
    NDArray& param = *param_of[t];
    store_values(graph_.tensors[t].stored_as, param.data(), param.size(), next);
    constant_data_[t] = reinterpret_cast<float*>(next);
    next += stored_bytes(param);
    param = NDArray();
  }
  arena_ = reinterpret_cast<float*>(next);
  bind_calls();
}

void GraphExecutor::bind_calls() {
  input_uses_.resize(graph_.inputs.size());
  bound_.assign(graph_.inputs.size(), nullptr);
  for (size_t o = 0; o < graph_.outputs.size(); ++o)
    for (size_t i = 0; i < graph_.inputs.size(); ++i)
      if (graph_.storage_root(graph_.outputs[o]) == graph_.storage_root(graph_.inputs[i]))
        outputs_of_inputs_.emplace_back(static_cast<int>(o), static_cast<int>(i));
  for (const auto& call : graph_.calls) {
    const int accelerator_kernel = vta_ ? vta_->kernel_index(call.kernel) : -1;
    BoundCall bound{accelerator_kernel >= 0 ? nullptr : library_.kernel(call.kernel), {}, accelerator_kernel};
    check_call(call, accelerator_kernel);
    for (int t : call.inputs) {
      for (size_t i = 0; i < graph_.inputs.size(); ++i)
        if (graph_.storage_root(t) == graph_.storage_root(graph_.inputs[i]))
          input_uses_[i].emplace_back(calls_.size(), bound.args.size());
      bound.args.push_back(tensor_data(t));
    }
    for (int t : call.outputs) bound.args.push_back(tensor_data(t));
    calls_.push_back(std::move(bound));
  }
}

void GraphExecutor::check_call(const ExecutableGraph::Call& call, int accelerator_kernel) const {
  const size_t arguments = call.inputs.size() + call.outputs.size();
  if (accelerator_kernel >= 0) {  // its buffers' bytes, as the program copies them
    const VtaKernelCode& k = vta_->kernel(accelerator_kernel);
    size_t i = 0;
    bool fits = k.arguments.size() == arguments;
    for (const auto* ids : {&call.inputs, &call.outputs})
      for (int t : *ids) {
        fits = fits && graph_.num_elements(t) * graph_.element_bytes(t) == k.arguments[i].stored_bytes;
        ++i;
      }
    if (!fits)
      throw Error(source_ + ": the graph's buffers for VTA kernel " + support::quoted(call.kernel) +
                  " are not the ones its program reads and writes");
    return;
  }
  const std::vector<int64_t> signature = library_.signature(call.kernel);
  if (signature.size() != arguments)
    throw Error(source_ + ": the graph calls kernel " + support::quoted(call.kernel) + " with " +
                std::to_string(arguments) + " buffers; it takes " + std::to_string(signature.size()));
  size_t i = 0;
  for (const auto* ids : {&call.inputs, &call.outputs})
    for (int t : *ids) {
      if (graph_.num_elements(t) != signature[i])
        throw Error(source_ + ": the graph gives kernel " + support::quoted(call.kernel) + " tensor " +
                    support::quoted(graph_.tensors[t].name) + " of " + std::to_string(graph_.num_elements(t)) +
                    " elements as argument " + std::to_string(i) + ", which holds " + std::to_string(signature[i]));
      ++i;
    }
}

void GraphExecutor::point_input_at(int index, void* data) {
  for (auto [call, arg] : input_uses_[static_cast<size_t>(index)]) calls_[call].args[arg] = data;
}

void GraphExecutor::bind_input(int index, const float* data) {
  check_index(index, graph_.inputs.size(), "input");
  if (data == nullptr) throw Error("bind_input: no data for input " + support::quoted(input_name(index)));
  point_input_at(index, const_cast<float*>(data));  // kernels never write their inputs
  bound_[static_cast<size_t>(index)] = data;
}

void GraphExecutor::unbind_inputs() {
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    point_input_at(static_cast<int>(i), tensor_data(graph_.inputs[i]));
    bound_[i] = nullptr;
  }
}

const float* GraphExecutor::output_data(int index) const {
  check_index(index, graph_.outputs.size(), "output");
  return tensor_data(graph_.outputs[index]);
}

float* GraphExecutor::tensor_data(int tensor) const {
  tensor = graph_.storage_root(tensor);
  if (float* c = constant_data_[tensor]) return c;
  return reinterpret_cast<float*>(reinterpret_cast<char*>(arena_) + plan_.offset[tensor]);
}

const std::string& GraphExecutor::input_name(int index) const {
  check_index(index, graph_.inputs.size(), "input");
  return graph_.tensors[graph_.inputs[index]].name;
}

const std::string& GraphExecutor::output_name(int index) const {
  check_index(index, graph_.outputs.size(), "output");
  return graph_.tensors[graph_.outputs[index]].name;
}

const std::vector<int64_t>& GraphExecutor::input_shape(int index) const {
  check_index(index, graph_.inputs.size(), "input");
  return graph_.tensors[graph_.inputs[index]].shape;
}

bool GraphExecutor::input_is_integer(int index) const {
  check_index(index, graph_.inputs.size(), "input");
  return graph_.tensors[graph_.inputs[index]].integer;
}

NDArray seeded_input(const std::vector<int64_t>& shape, bool integer, uint64_t seed) {
  NDArray x(shape);
  if (!integer) {
    x.fill_random(seed);
    return x;
  }
  x.fill_random(seed, 0.0f, 2.0f);
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = std::floor(x.data()[i]);
  return x;
}

NDArray GraphExecutor::random_input(int index, uint64_t seed) const {
  return seeded_input(input_shape(index), input_is_integer(index), seed);
}

void GraphExecutor::set_random_inputs(uint64_t seed) {
  for (int i = 0; i < num_inputs(); ++i) set_input(i, random_input(i, seed + static_cast<uint64_t>(i)));
}

const std::vector<int64_t>& GraphExecutor::output_shape(int index) const {
  check_index(index, graph_.outputs.size(), "output");
  return graph_.tensors[graph_.outputs[index]].shape;
}

bool GraphExecutor::has_input(const std::string& name) const {
  for (int t : graph_.inputs)
    if (graph_.tensors[t].name == name) return true;
  return false;
}

int GraphExecutor::input_index(const std::string& name) const {
  return index_by_name(graph_, graph_.inputs, name, "input");
}

int GraphExecutor::output_index(const std::string& name) const {
  return index_by_name(graph_, graph_.outputs, name, "output");
}

void GraphExecutor::set_input(int index, const NDArray& value) {
  const std::vector<int64_t>& shape = input_shape(index);
  if (value.shape() != shape)
    throw Error("input " + support::quoted(input_name(index)) + " has shape " + shape_text(shape) + ", got " +
                shape_text(value.shape()));
  if (input_is_integer(index))
    for (int64_t i = 0; i < value.size(); ++i)
      if (value.data()[i] != std::nearbyint(value.data()[i]))
        throw Error("input " + support::quoted(input_name(index)) + " holds integers (token ids); element " +
                    std::to_string(i) + " is " + std::to_string(value.data()[i]));
  point_input_at(index, tensor_data(graph_.inputs[index]));
  bound_[static_cast<size_t>(index)] = nullptr;
  std::memcpy(tensor_data(graph_.inputs[index]), value.data(), value.size() * sizeof(float));
}

void GraphExecutor::set_threads(int threads) {
  if (threads < 0) throw Error("threads must be at least 0, got " + std::to_string(threads));
  threads_ = threads > 0 ? threads : target_threads_;
}

void GraphExecutor::call(size_t i) {
  BoundCall& c = calls_[i];
  if (c.accelerator_kernel >= 0) {
    if (accelerator_stats_.size() != calls_.size()) accelerator_stats_.resize(calls_.size());
    accelerator_stats_[i] = vta_->run(c.accelerator_kernel, c.args.data());
  } else if (c.kernel(c.args.data()) != 0) {
    throw Error(source_ + ": kernel " + support::quoted(graph_.calls[i].kernel) + " failed");
  }
}

void GraphExecutor::run() {
  if (threads_ > 0 && num_threads() != threads_) set_num_threads(threads_);
  for (size_t i = 0; i < calls_.size(); ++i) call(i);
  for (auto [output, input] : outputs_of_inputs_)
    if (const float* bound = bound_[static_cast<size_t>(input)])
      std::memcpy(tensor_data(graph_.outputs[output]), bound,
                  static_cast<size_t>(graph_.num_elements(graph_.outputs[output])) * sizeof(float));
}

std::optional<NDArray> GraphExecutor::tensor_value(const std::string& name) const {
  for (int t = 0; t < static_cast<int>(graph_.tensors.size()); ++t) {
    if (graph_.tensors[t].name != name) continue;
    const int root = graph_.storage_root(t);
    const bool pinned = constant_data_[root] || std::count(graph_.inputs.begin(), graph_.inputs.end(), root) ||
                        std::count(graph_.outputs.begin(), graph_.outputs.end(), t);
    if (!pinned && !keep_every_tensor_)
      throw Error(source_ + ": tensor '" + name + "' is intermediate: its memory is reused unless every tensor is kept");
    NDArray out(graph_.tensors[t].shape);
    load_values(graph_.tensors[root].stored_as, reinterpret_cast<const char*>(tensor_data(t)), out.size(), out.data());
    return out;
  }
  return std::nullopt;
}

NDArray GraphExecutor::get_output(int index) const {
  NDArray out(output_shape(index));
  std::memcpy(out.data(), tensor_data(graph_.outputs[index]), out.size() * sizeof(float));
  return out;
}

void warm_up(const std::function<void()>& run) {
  // Caches, pages, the workspace's blocks and the thread pool's workers (a
  // GPU's clocks and its driver's first launches): a fresh process runs its
  // first ~20 calls of a small network slower (MobileNet-v2 at 2 threads:
  // median 5.7 ms over 5 calls after one warm-up call, 4.6 ms later), so
  // warm up for a tenth of a second.
  const auto warm_start = std::chrono::steady_clock::now();
  do run();
  while (std::chrono::steady_clock::now() - warm_start < std::chrono::milliseconds(100));
}

BenchmarkResult benchmark_runs(const std::function<void()>& run, int number, int repeat) {
  if (number < 1 || repeat < 1) throw Error("benchmark: number and repeat must be at least 1");
  warm_up(run);
  BenchmarkResult result;
  for (int r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < number; ++i) run();
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    result.seconds.push_back(elapsed.count() / number);
  }
  return result;
}

BenchmarkResult GraphExecutor::benchmark(int number, int repeat) {
  return benchmark_runs([this] { run(); }, number, repeat);
}

std::vector<double> GraphExecutor::profile(int runs) {
  if (runs < 1) throw Error("profile: runs must be at least 1");
  run();
  std::vector<double> seconds(calls_.size(), std::numeric_limits<double>::infinity());
  for (int r = 0; r < runs; ++r)
    for (size_t i = 0; i < calls_.size(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      call(i);
      const double host = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      // The accelerator's time is its simulated cycles, not the host's simulating them.
      seconds[i] = std::min(seconds[i], is_accelerator_call(i)
                                            ? accelerator_config().seconds(accelerator_stats_[i].cycles)
                                            : host);
    }
  return seconds;
}

}  // namespace tessera::runtime
