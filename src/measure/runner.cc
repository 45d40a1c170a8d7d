#include "measure/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "codegen/module.h"
#include "measure/child_process.h"
#include "measure/kernel_args.h"
#include "runtime/thread_pool.h"
#include "tessera/error.h"

namespace tessera::measure {

namespace {

using Clock = ChildProcess::Clock;

double unix_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// What every candidate of one DAG runs on, made once in the parent and
// inherited by the children through fork.
struct PreparedDag {
  std::vector<runtime::NDArray> inputs;
  std::optional<runtime::NDArray> reference;  // expected first output, when checking
  std::string reference_error;                // why there is no reference, if it failed
};

// Candidates of one task share the DAG's tensor nodes, so the output nodes identify it cheaply.
using DagKey = std::vector<const ir::TensorNode*>;

DagKey key_of(const ir::ComputeDAG& dag) {
  DagKey key;
  for (const auto& t : dag.outputs()) key.push_back(t.get());
  return key;
}

PreparedDag prepare(const ir::ComputeDAG& dag, const ReferenceFn& reference) {
  PreparedDag p;
  p.inputs = make_inputs(dag);
  if (reference && !dag.outputs().empty()) {
    std::vector<const float*> input_ptrs;
    for (const auto& a : p.inputs) input_ptrs.push_back(a.data());
    try {
      runtime::NDArray want(dag.outputs()[0]->shape);
      reference(input_ptrs, want.data());
      p.reference = std::move(want);
    } catch (const std::exception& e) {
      p.reference_error = std::string("reference implementation failed: ") + e.what();
    }
  }
  return p;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The child's report: the ErrorKind as one byte, then the costs as raw doubles
// (ErrorKind::None) or the error message.
std::string encode_error(ErrorKind kind, const std::string& message) {
  return std::string(1, static_cast<char>(kind)) + message;
}

std::string encode_costs(const std::vector<double>& costs) {
  std::string bytes(1, static_cast<char>(ErrorKind::None));
  bytes.append(reinterpret_cast<const char*>(costs.data()), costs.size() * sizeof(double));
  return bytes;
}

// Runs in the child: load, check, time. Every outcome is written to fd.
void run_in_child(int fd, int index, const BuildResult& build, const ir::ComputeDAG& dag,
                  PreparedDag& prepared, const LocalRunnerOptions& options,
                  const std::function<void(int)>& fault_hook) {
  auto fail = [fd](ErrorKind kind, const std::string& message) {
    write_all(fd, encode_error(kind, message));
  };
  std::optional<codegen::Module> module;
  codegen::KernelFn kernel = nullptr;
  try {
    module.emplace(codegen::Module::load_object(read_file(build.object_path)));
    kernel = module->function(build.function_name);
  } catch (const std::exception& e) {
    fail(ErrorKind::RuntimeDevice, std::string("cannot load kernel: ") + e.what());
    return;
  }

  // The child owns copy-on-write copies of the prepared inputs; a kernel
  // scribbling over them cannot disturb the next candidate.
  auto outputs = make_outputs(dag);
  auto args = kernel_arg_pointers(prepared.inputs, outputs);
  runtime::set_num_threads(options.num_threads);
  if (fault_hook) fault_hook(index);

  if (int rc = kernel(args.data()); rc != 0) {
    fail(ErrorKind::RuntimeDevice, fmt::format("kernel returned {}", rc));
    return;
  }
  if (prepared.reference) {
    auto c = compare_output(outputs[0], *prepared.reference, options.tolerance);
    if (!c.ok) {
      fail(ErrorKind::WrongAnswer, c.describe());
      return;
    }
  }

  TimeOptions time_options{options.number, options.repeat, options.min_repeat_ms,
                           options.enable_cpu_cache_flush};
  FlushList flush;
  if (options.enable_cpu_cache_flush) flush = flush_list_of(prepared.inputs, outputs);
  int bad_rc = 0;
  auto costs = time_function(
      [&] {
        if (int rc = kernel(args.data()); rc != 0) bad_rc = rc;
      },
      time_options, flush);
  if (bad_rc != 0) {
    fail(ErrorKind::RuntimeDevice, fmt::format("kernel returned {}", bad_rc));
    return;
  }
  write_all(fd, encode_costs(costs));
}

// Turns what the child said and how it ended into a result.
void interpret(ChildProcess& child, int repeat, MeasureResult& r) {
  const std::string& out = child.output();
  auto exit = child.wait(Clock::now() + std::chrono::seconds(1));
  if (!out.empty()) {
    auto kind = static_cast<ErrorKind>(out[0]);
    size_t payload = out.size() - 1;
    if (kind != ErrorKind::None) {
      r.error = kind;
      r.error_message = out.substr(1);
      return;
    }
    if (payload == static_cast<size_t>(std::max(repeat, 0)) * sizeof(double)) {
      r.costs.resize(payload / sizeof(double));
      std::memcpy(r.costs.data(), out.data() + 1, payload);
      return;
    }
    // A partial report: the child died while writing it; fall through to how it ended.
  }
  r.error = ErrorKind::RuntimeDevice;
  r.error_message = exit.signaled ? "kernel crashed: " + signal_name(exit.signal)
                                  : fmt::format("run process exited with status {} without a result",
                                                exit.code);
}

}  // namespace

LocalRunner::LocalRunner(LocalRunnerOptions options, ReferenceFn reference)
    : options_(std::move(options)), reference_(std::move(reference)) {
  // Options that would make every result empty or fail are the caller's
  // mistake, not the candidates': refused here, before any is measured.
  const auto& o = options_;
  if (o.number < 1) throw Error(fmt::format("measure option number={}: must be at least 1", o.number));
  if (o.repeat < 1) throw Error(fmt::format("measure option repeat={}: must be at least 1", o.repeat));
  if (o.min_repeat_ms < 0)
    throw Error(fmt::format("measure option min_repeat_ms={}: must not be negative", o.min_repeat_ms));
  if (!(o.timeout > 0) || !std::isfinite(o.timeout))
    throw Error(fmt::format("measure option timeout={}: must be a positive number of seconds", o.timeout));
  if (!(o.tolerance >= 0)) throw Error(fmt::format("measure option tolerance={}: must not be negative", o.tolerance));
  if (o.num_threads < 0) throw Error(fmt::format("measure option num_threads={}: must not be negative", o.num_threads));
}

std::vector<MeasureResult> LocalRunner::run(const std::vector<MeasureInput>& inputs,
                                            const std::vector<BuildResult>& builds) {
  if (inputs.size() != builds.size())
    throw Error(fmt::format("LocalRunner::run: {} inputs but {} build results", inputs.size(),
                            builds.size()));
  const auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options_.timeout));
  const bool check = options_.check_correctness && reference_;
  std::map<DagKey, PreparedDag> prepared;

  std::vector<MeasureResult> results(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const BuildResult& build = builds[i];
    MeasureResult& r = results[i];
    if (build.error != ErrorKind::None) {  // nothing to run
      r.error = build.error;
      r.error_message = build.error_message;
      r.all_cost = build.time_cost;
      r.timestamp = unix_time_now();
      continue;
    }

    const ir::ComputeDAG& dag = inputs[i].dag;
    auto key = key_of(dag);
    auto it = prepared.find(key);
    if (it == prepared.end())
      it = prepared.emplace(key, prepare(dag, check ? reference_ : nullptr)).first;
    PreparedDag& inputs_of_dag = it->second;

    auto start = Clock::now();
    if (check && !inputs_of_dag.reference) {
      r.error = ErrorKind::Unknown;
      r.error_message = inputs_of_dag.reference_error;
    } else {
      try {
        // One child at a time: candidates running side by side would disturb each other's timings.
        ChildProcess child([&](int fd) {
          run_in_child(fd, static_cast<int>(i), build, dag, inputs_of_dag, options_, fault_hook_);
        });
        if (child.read_until(child.start_time() + timeout)) {
          interpret(child, options_.repeat, r);
        } else {
          child.kill();
          r.error = ErrorKind::RunTimeout;
          r.error_message = fmt::format("no result within {:g} s", options_.timeout);
        }
      } catch (const Error& e) {  // could not fork: this candidate fails, the batch goes on
        r.error = ErrorKind::Unknown;
        r.error_message = e.what();
      }
    }
    r.all_cost = build.time_cost + std::chrono::duration<double>(Clock::now() - start).count();
    r.timestamp = unix_time_now();
  }
  return results;
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
