#pragma once
// A lowered function compiled to OpenCL C and built for the OpenCL device
// (runtime/opencl_device.h): its kernels launched in order over their grids,
// the workspace in device memory. What runs a GPU schedule without a GPU
// (PoCL's CPU device in CI), and what an OpenCL target runs.
#include <memory>
#include <string>
#include <vector>

#include "codegen/gpu_source.h"

namespace tessera::codegen {

class OpenClModule {
 public:
  // Emits OpenCL C (codegen/gpu_source.h) and builds it; throws tessera::Error
  // naming the kernel when it cannot run or the device rejects it.
  OpenClModule(const tir::LoweredFunc& f, const target::GpuLimits& limits);
  ~OpenClModule();
  OpenClModule(OpenClModule&&) noexcept;

  const GpuSource& source() const;
  // Copies the inputs in, launches every kernel, copies the outputs back.
  // `args` point at host arrays in the function's argument order.
  void run(const std::vector<float*>& args);
  // The device time of one run of every kernel, inputs already in place.
  double run_timed();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::codegen
