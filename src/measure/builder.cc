#include "measure/builder.h"

#include <poll.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <list>
#include <thread>

#include <fmt/format.h>

#include "codegen/gpu_kernel_set.h"
#include "codegen/llvm_codegen.h"
#include "codegen/shared_object.h"
#include "measure/child_process.h"
#include "support/fd_io.h"
#include "tessera/error.h"
#include "tir/lower.h"

namespace tessera::measure {

namespace {

using Clock = ChildProcess::Clock;

constexpr const char* kFunctionName = "kernel";

// A worker's report: one status byte (0 built, 1 failed), the ErrorKind, then
// the error message.
std::string encode_report(ErrorKind kind, const std::string& message) {
  std::string bytes;
  bytes.push_back(kind == ErrorKind::None ? 0 : 1);
  bytes.push_back(static_cast<char>(kind));
  return bytes + message;
}

// Runs in the worker process: lower, compile, write the object.
void build_in_worker(int fd, const MeasureInput& input, const std::string& object_path, bool shared_object) {
  auto report = [fd](ErrorKind kind, const std::string& message) {
    support::write_all(fd, encode_report(kind, message));
  };
  tir::LoweredFunc func;
  try {
    func = tir::lower(input.dag, input.trace, kFunctionName);
  } catch (const std::exception& e) {  // tessera::Error: the trace does not apply to this DAG
    report(ErrorKind::Instantiation, e.what());
    return;
  }
  std::string object;
  try {
    if (input.target.is_gpu()) {
      // The kernels' source (and for cuda their cubin), which the runner's
      // child hands to the device's driver.
      codegen::GpuKernelSet kernels(input.target);
      kernels.add(func);
      object = kernels.finish().serialize();
    } else {
      object = codegen::compile_to_object(func, input.target);
    }
  } catch (const std::exception& e) {
    report(input.target.is_gpu() ? ErrorKind::CompileDevice : ErrorKind::CompileHost, e.what());
    return;
  }
  if (shared_object && !input.target.is_gpu()) {
    try {
      codegen::write_shared_object(object, object_path);
    } catch (const std::exception& e) {
      report(ErrorKind::CompileHost, e.what());
      return;
    }
    report(ErrorKind::None, "");
    return;
  }
  std::ofstream out(object_path, std::ios::binary | std::ios::trunc);
  out.write(object.data(), static_cast<std::streamsize>(object.size()));
  out.close();
  if (!out) {
    report(ErrorKind::CompileHost, "cannot write " + object_path + ": " + std::strerror(errno));
    return;
  }
  report(ErrorKind::None, "");
}

struct Worker {
  int index;
  std::string object_path;
  ChildProcess process;
};

BuildResult result_of(Worker& w, bool timed_out, double timeout) {
  BuildResult r;
  r.time_cost = std::chrono::duration<double>(Clock::now() - w.process.start_time()).count();
  const std::string& out = w.process.output();
  if (timed_out) {
    r.error = ErrorKind::BuildTimeout;
    r.error_message = fmt::format("build did not finish within {:g} s", timeout);
    return r;
  }
  if (out.size() >= 2) {  // the worker reported; how it then exited does not matter
    if (out[0] == 0) {
      r.object_path = w.object_path;
      r.function_name = kFunctionName;
    } else {
      r.error = static_cast<ErrorKind>(out[1]);
      r.error_message = out.substr(2);
    }
    w.process.wait(Clock::now() + std::chrono::seconds(1));
    return r;
  }
  // At end of file without a report: it died, or is about to exit.
  auto exit = w.process.wait(Clock::now() + std::chrono::seconds(1));
  r.error = ErrorKind::CompileHost;
  r.error_message = exit.signaled
                        ? "build process killed by " + signal_name(exit.signal)
                        : fmt::format("build process exited with status {} without a report", exit.code);
  return r;
}

}  // namespace

LocalBuilder::LocalBuilder(LocalBuilderOptions options) : options_(std::move(options)) {
  if (!(options_.timeout > 0) || !std::isfinite(options_.timeout))
    throw Error("build option timeout=" + std::to_string(options_.timeout) + ": must be a positive number of seconds");
  if (options_.n_parallel < 0)
    throw Error("build option n_parallel=" + std::to_string(options_.n_parallel) + ": must not be negative");
  if (options_.build_dir.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "tessera-build-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr)
      throw Error("cannot create a build directory " + pattern + ": " + std::strerror(errno));
    dir_ = pattern;
    owns_dir_ = true;
  } else {
    std::error_code ec;
    std::filesystem::create_directories(options_.build_dir, ec);
    if (ec) throw Error("cannot create build directory " + options_.build_dir + ": " + ec.message());
    dir_ = options_.build_dir;
  }
}

LocalBuilder::~LocalBuilder() {
  if (owns_dir_) {
    std::error_code ec;  // a destructor must not throw; a leftover temp dir is harmless
    std::filesystem::remove_all(dir_, ec);
  }
}

std::vector<BuildResult> LocalBuilder::build(const std::vector<MeasureInput>& inputs) {
  std::vector<BuildResult> results(inputs.size());
  const size_t max_workers = options_.n_parallel > 0
                                 ? static_cast<size_t>(options_.n_parallel)
                                 : std::max(1u, std::thread::hardware_concurrency());
  const auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options_.timeout));

  std::list<Worker> workers;  // a list: ChildProcess moves but is not assignable
  size_t next = 0;
  while (next < inputs.size() || !workers.empty()) {
    // Start workers up to the limit.
    while (workers.size() < max_workers && next < inputs.size()) {
      int index = static_cast<int>(next++);
      std::string path = fmt::format("{}/cand{}.{}", dir_, counter_++, options_.shared_object ? "so" : "o");
      const MeasureInput& input = inputs[index];
      const auto& hook = fault_hook_;
      try {
        workers.push_back(Worker{index, path, ChildProcess([&](int fd) {
                                   if (hook) hook(index);
                                   build_in_worker(fd, input, path, options_.shared_object);
                                 })});
      } catch (const Error& e) {  // no process could be made; that candidate fails, the batch goes on
        results[index].error = ErrorKind::CompileHost;
        results[index].error_message = e.what();
      }
    }
    if (workers.empty()) continue;

    // Wait until some worker has something to say or the earliest deadline passes.
    std::vector<pollfd> fds;
    auto earliest = Clock::time_point::max();
    for (auto& w : workers) {
      if (w.process.fd() >= 0) fds.push_back({w.process.fd(), POLLIN, 0});
      earliest = std::min(earliest, w.process.start_time() + timeout);
    }
    auto wait_ms = std::chrono::ceil<std::chrono::milliseconds>(earliest - Clock::now()).count();
    ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(wait_ms, 0, 1 << 30)));

    // Collect finished and overdue workers.
    auto now = Clock::now();
    for (auto it = workers.begin(); it != workers.end();) {
      bool finished = !it->process.read_available();
      bool overdue = !finished && now >= it->process.start_time() + timeout;
      if (!finished && !overdue) {
        ++it;
        continue;
      }
      if (overdue) it->process.kill();
      results[it->index] = result_of(*it, overdue, options_.timeout);
      it = workers.erase(it);
    }
  }
  return results;
}

}  // namespace tessera::measure
