#include "measure/isolated_run.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <elf.h>

#include "measure/child_process.h"
#include "support/fd_io.h"
#include "runtime/gpu_backend.h"
#include "runtime/thread_pool.h"
#include "support/half.h"
#include "support/read_file.h"
#include "tessera/error.h"

namespace tessera::measure {

namespace {

using Clock = ChildProcess::Clock;

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

// Keeps the child (and the threads it starts) on `cores`.
void pin_to(const std::vector<int>& cores) {
  if (cores.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cores)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0)
    throw Error(fmt::format("cannot pin to cores {}: {}", fmt::join(cores, ","), std::strerror(errno)));
}

LoadedKernel load_shared_object(const std::string& bytes, const std::string& function) {
  auto library = std::make_shared<runtime::KernelLibrary>(runtime::KernelLibrary::from_shared_object(bytes, "the kernel"));
  return {library, library->kernel(function)};
}

// A GPU candidate in a child, its report returned: the device's driver loads
// its kernels (the child owns the device: a faulting kernel ends this process
// only), its arguments go to device memory, the first output is checked, and
// each repeat times `number` runs (more while under min_repeat_ms) by the
// device's clock, each run after a flush of the device's cache where the
// options ask for cold caches.
std::string measure_gpu_here(const std::string& bytes, const std::string& function, const KernelArguments& arguments,
                             const LocalRunnerOptions& options, bool check) {
  auto fail = [](ErrorKind kind, const std::string& message) { return encode_error(kind, message); };
  try {
    const runtime::GpuCode code = runtime::GpuCode::deserialize(bytes, "the kernel");
    const auto entry = code.kernels.find(function);
    if (entry == code.kernels.end()) throw Error("the build has no kernel " + function);
    std::unique_ptr<runtime::GpuBackend> device = runtime::make_gpu_backend(code.dialect);
    device->load(code);
    std::vector<int> buffers;
    for (size_t i = 0; i < arguments.inputs.size(); ++i) {
      const runtime::NDArray& in = arguments.inputs[i];
      if (i < arguments.half_inputs.size() && arguments.half_inputs[i]) {
        const std::vector<uint16_t> halves = support::to_halves(in.data(), in.size());
        buffers.push_back(device->allocate(halves.size() * sizeof(uint16_t)));
        device->write(buffers.back(), halves.data(), halves.size() * sizeof(uint16_t));
        continue;
      }
      buffers.push_back(device->allocate(in.size() * sizeof(float)));
      device->write(buffers.back(), in.data(), in.size() * sizeof(float));
    }
    const size_t output_element = arguments.half_outputs ? sizeof(uint16_t) : sizeof(float);
    std::vector<runtime::NDArray> outputs;
    for (const auto& shape : arguments.output_shapes) {
      outputs.emplace_back(shape);
      buffers.push_back(device->allocate(outputs.back().size() * output_element));
    }
    for (int64_t w : entry->second.workspace) buffers.push_back(device->allocate(w * sizeof(float)));
    auto run_once = [&] {
      for (const runtime::GpuLaunch& l : entry->second.launches) {
        std::vector<int> args;
        for (int p : l.params) args.push_back(buffers.at(p));
        device->launch(l, args);
      }
    };
    run_once();
    device->finish();
    if (check) {
      double tolerance = options.tolerance;
      if (arguments.half_outputs) {
        std::vector<uint16_t> halves(outputs[0].size());
        device->read(buffers[arguments.inputs.size()], halves.data(), halves.size() * sizeof(uint16_t));
        support::from_halves(halves.data(), outputs[0].size(), outputs[0].data());
        tolerance = std::max(tolerance, kHalfStorageTolerance);
      } else {
        device->read(buffers[arguments.inputs.size()], outputs[0].data(), outputs[0].size() * sizeof(float));
      }
      auto c = compare_output(outputs.at(0), *arguments.expected, tolerance);
      if (!c.ok) return fail(ErrorKind::WrongAnswer, c.describe());
    }
    std::vector<double> costs;
    for (int r = 0; r < options.repeat; ++r) {
      int runs = 0;
      double seconds = 0;
      do {
        if (options.enable_cpu_cache_flush) {
          // Cold caches: the device's cache flushed before each run, each run timed alone.
          for (int n = 0; n < options.number; ++n) {
            device->flush_cache();
            device->begin_timing();
            run_once();
            seconds += device->finish();
          }
        } else {
          device->begin_timing();
          for (int n = 0; n < options.number; ++n) run_once();
          seconds += device->finish();
        }
        runs += options.number;
      } while (seconds * 1e3 < options.min_repeat_ms);
      costs.push_back(seconds / runs);
    }
    return encode_costs(costs);
  } catch (const std::exception& e) {
    return fail(ErrorKind::RuntimeDevice, e.what());
  }
}

// Runs in the child: load, check, time. Every outcome is written to fd.
void run_in_child(int fd, const std::string& object_path, const std::string& function,
                  const KernelArguments& arguments, const LocalRunnerOptions& options, bool check,
                  const KernelLoader& load_object, const std::function<void()>& in_child) {
  auto fail = [fd](ErrorKind kind, const std::string& message) {
    support::write_all(fd, encode_error(kind, message));
  };
  LoadedKernel loaded;
  try {
    pin_to(options.cores);
    const std::string bytes = support::read_file(object_path);
    if (runtime::is_gpu_code(bytes)) {
      support::write_all(fd, measure_gpu_here(bytes, function, arguments, options, check));
      return;
    }
    if (is_shared_object(bytes)) loaded = load_shared_object(bytes, function);
    else if (load_object) loaded = load_object(bytes, function);
    else throw Error("not a shared object (this runner loads no other kind)");
  } catch (const std::exception& e) {
    fail(ErrorKind::RuntimeDevice, std::string("cannot load kernel: ") + e.what());
    return;
  }

  const runtime::Kernel kernel = loaded.kernel;
  // The child's pages are copy-on-write copies of the parent's: what the
  // kernel writes into them stays in the child.
  auto& inputs = const_cast<std::vector<runtime::NDArray>&>(arguments.inputs);
  std::vector<runtime::NDArray> outputs;
  for (const auto& shape : arguments.output_shapes) outputs.emplace_back(shape);
  auto args = kernel_arg_pointers(inputs, outputs);
  runtime::set_num_threads(options.num_threads);
  if (in_child) in_child();

  if (int rc = kernel(args.data()); rc != 0) {
    fail(ErrorKind::RuntimeDevice, fmt::format("kernel returned {}", rc));
    return;
  }
  if (check) {
    auto c = compare_output(outputs.at(0), *arguments.expected, options.tolerance);
    if (!c.ok) {
      fail(ErrorKind::WrongAnswer, c.describe());
      return;
    }
  }

  TimeOptions time_options{options.number, options.repeat, options.min_repeat_ms,
                           options.enable_cpu_cache_flush};
  FlushList flush;
  if (options.enable_cpu_cache_flush) flush = flush_list_of(inputs, outputs);
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
  support::write_all(fd, encode_costs(costs));
}

// A child's report (encode_error / encode_costs) as a result; false when it
// is not a whole one.
bool decode_report(const std::string& report, int repeat, MeasureResult& r) {
  if (report.empty()) return false;
  const auto kind = static_cast<ErrorKind>(report[0]);
  const size_t payload = report.size() - 1;
  if (kind != ErrorKind::None) {
    r.error = kind;
    r.error_message = report.substr(1);
    return true;
  }
  if (payload != static_cast<size_t>(std::max(repeat, 0)) * sizeof(double)) return false;
  r.costs.resize(payload / sizeof(double));
  std::memcpy(r.costs.data(), report.data() + 1, payload);
  return true;
}

// Why `arguments` cannot be measured at all (no output, or no expected
// output to check against), or "".
std::string unmeasurable(const KernelArguments& arguments, bool check) {
  if (check && !arguments.expected)
    return arguments.expected_error.empty() ? "no expected output to check against" : arguments.expected_error;
  if (arguments.output_shapes.empty()) return "a kernel without outputs";
  return "";
}

// A child that ended without a whole report, by how it ended.
void ended_without_report(const ChildProcess::Exit& exit, MeasureResult& r) {
  r.error = ErrorKind::RuntimeDevice;
  r.error_message = exit.signaled ? "kernel crashed: " + signal_name(exit.signal)
                                  : fmt::format("run process exited with status {} without a result",
                                                exit.code);
}

// Turns what the child said and how it ended into a result.
void interpret(ChildProcess& child, int repeat, MeasureResult& r) {
  auto exit = child.wait(Clock::now() + std::chrono::seconds(1));
  // A partial report: the child died while writing it; the result is how it ended.
  if (!decode_report(child.output(), repeat, r)) ended_without_report(exit, r);
}

}  // namespace

bool is_shared_object(const std::string& bytes) {
  if (bytes.size() < sizeof(Elf64_Ehdr) || bytes.compare(0, SELFMAG, ELFMAG) != 0) return false;
  Elf64_Ehdr header;
  std::memcpy(&header, bytes.data(), sizeof header);
  return header.e_type == ET_DYN;
}

void check_runner_options(const LocalRunnerOptions& o) {
  if (o.number < 1) throw Error(fmt::format("measure option number={}: must be at least 1", o.number));
  if (o.repeat < 1) throw Error(fmt::format("measure option repeat={}: must be at least 1", o.repeat));
  if (o.min_repeat_ms < 0)
    throw Error(fmt::format("measure option min_repeat_ms={}: must not be negative", o.min_repeat_ms));
  if (!(o.timeout > 0) || !std::isfinite(o.timeout))
    throw Error(fmt::format("measure option timeout={}: must be a positive number of seconds", o.timeout));
  if (!(o.tolerance >= 0)) throw Error(fmt::format("measure option tolerance={}: must not be negative", o.tolerance));
  if (o.num_threads < 0) throw Error(fmt::format("measure option num_threads={}: must not be negative", o.num_threads));
  for (int c : o.cores)
    if (c < 0 || c >= CPU_SETSIZE) throw Error(fmt::format("measure option cores: no core {}", c));
}

KernelArguments make_kernel_arguments(const std::vector<std::vector<int64_t>>& input_shapes,
                                      const std::vector<std::vector<int64_t>>& output_shapes) {
  KernelArguments a;
  a.inputs = make_inputs(input_shapes);
  a.output_shapes = output_shapes;
  return a;
}

MeasureResult run_isolated(const std::string& object_path, const std::string& function,
                           const KernelArguments& arguments, const LocalRunnerOptions& options, bool check,
                           const KernelLoader& load_object, const std::function<void()>& in_child) {
  MeasureResult r;
  if (std::string why = unmeasurable(arguments, check); !why.empty()) {
    r.error = ErrorKind::Unknown;
    r.error_message = why;
    return r;
  }
  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.timeout));
  try {
    ChildProcess child([&](int fd) { run_in_child(fd, object_path, function, arguments, options, check, load_object, in_child); });
    if (child.read_until(child.start_time() + timeout)) {
      interpret(child, options.repeat, r);
    } else {
      child.kill();
      r.error = ErrorKind::RunTimeout;
      r.error_message = fmt::format("no result within {:g} s", options.timeout);
    }
  } catch (const Error& e) {  // could not fork: this candidate fails, the batch goes on
    r.error = ErrorKind::Unknown;
    r.error_message = e.what();
  }
  return r;
}

std::vector<MeasureResult> run_gpu_batch(const std::vector<GpuJob>& jobs, const LocalRunnerOptions& options, bool check,
                                         const std::function<void(size_t)>& in_child) {
  std::vector<MeasureResult> results(jobs.size());
  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.timeout));
  size_t next = 0;
  // One child per stretch of candidates: it ends at a candidate that crashes,
  // hangs or fails on the device (a CUDA fault poisons the context), which
  // gets that error, and a fresh child goes on from the next.
  while (next < jobs.size()) {
    const size_t first = next;
    try {
      ChildProcess child([&](int fd) {
        pin_to(options.cores);
        for (size_t k = first; k < jobs.size(); ++k) {
          const GpuJob& job = jobs[k];
          std::string report;
          if (std::string why = unmeasurable(*job.arguments, check); !why.empty()) {
            report = encode_error(ErrorKind::Unknown, why);
          } else {
            try {
              const std::string bytes = support::read_file(job.object_path);
              if (!runtime::is_gpu_code(bytes)) throw Error("not GPU code");
              if (in_child) in_child(k);
              LocalRunnerOptions checked = options;
              checked.tolerance = std::max(options.tolerance, job.tolerance);
              report = measure_gpu_here(bytes, job.function, *job.arguments, checked, check);
            } catch (const std::exception& e) {
              report = encode_error(ErrorKind::RuntimeDevice, std::string("cannot load kernel: ") + e.what());
            }
          }
          if (!support::write_all(fd, support::framed(report))) return;
          if (static_cast<ErrorKind>(report[0]) == ErrorKind::RuntimeDevice) return;
        }
      });
      size_t at = 0;
      while (next < jobs.size()) {
        const auto started = Clock::now();
        std::optional<std::string> report;
        const Clock::time_point deadline = started + timeout;
        while (!(report = support::next_frame(child.output(), at)) && child.fd() >= 0 && Clock::now() < deadline)
          child.read_until_more(deadline);
        MeasureResult& r = results[next];
        r.all_cost = std::chrono::duration<double>(Clock::now() - started).count();
        if (report && decode_report(*report, options.repeat, r)) {
          ++next;
          if (r.error == ErrorKind::RuntimeDevice) break;  // the child ends after it
          continue;
        }
        if (child.fd() < 0) {
          ended_without_report(child.wait(Clock::now() + std::chrono::seconds(1)), r);
        } else {
          child.kill();
          r.error = ErrorKind::RunTimeout;
          r.error_message = fmt::format("no result within {:g} s", options.timeout);
        }
        ++next;
        break;
      }
    } catch (const Error& e) {  // could not fork: this candidate fails, the batch goes on
      results[next].error = ErrorKind::Unknown;
      results[next].error_message = e.what();
      ++next;
    }
  }
  return results;
}

}  // namespace tessera::measure
