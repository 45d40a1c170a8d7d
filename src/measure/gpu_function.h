#pragma once
// One lowered function on a GPU target's device: its kernels written and
// compiled (codegen::GpuKernelSet), loaded by the device's backend (OpenCL,
// or the CUDA driver), its arguments and workspace in device memory. What
// `tessera op --target cuda|opencl` runs and times, and what the GPU tests
// check against each operator's reference.
#include <memory>
#include <string>
#include <vector>

#include "runtime/gpu_backend.h"
#include "target/target.h"
#include "tir/stmt.h"

namespace tessera::measure {

class GpuFunction {
 public:
  // Throws tessera::Error naming the kernel or the device when it cannot run.
  GpuFunction(const tir::LoweredFunc& f, const target::Target& target);

  const runtime::GpuCode& code() const { return code_; }
  std::string device_name() const { return backend_->device_name(); }
  // Copies `args` (host arrays in the function's argument order) in, runs
  // every kernel, copies the outputs back (half-stored ones converted).
  void run(const std::vector<float*>& args);
  // Device seconds of one run of every kernel, the arguments already in place.
  double run_timed();

 private:
  void launch_all();

  tir::LoweredFunc f_;
  runtime::GpuCode code_;
  std::unique_ptr<runtime::GpuBackend> backend_;
  std::vector<int> buffers_;  // the arguments', then the workspace's
};

}  // namespace tessera::measure
