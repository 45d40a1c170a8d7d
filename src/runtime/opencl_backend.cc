// GpuBackend over the OpenCL device (runtime/opencl_device.h).
#include <chrono>
#include <map>

#include "runtime/cuda_backend.h"
#include "runtime/gpu_backend.h"
#include "runtime/opencl_device.h"
#include "tessera/error.h"

namespace tessera::runtime {

namespace {

class OpenClBackend : public GpuBackend {
 public:
  OpenClBackend() : device_(OpenClDevice::get()) {}

  std::string device_name() const override { return device_.name(); }
  int allocate(size_t bytes) override {
    buffers_.push_back(device_.allocate(bytes));
    return static_cast<int>(buffers_.size()) - 1;
  }
  void write(int buffer, const void* host, size_t bytes) override { device_.write(buffers_.at(buffer), host, bytes); }
  void read(int buffer, void* host, size_t bytes) override { device_.read(buffers_.at(buffer), host, bytes); }
  void load(const GpuCode& code) override { program_ = device_.build(code.source); }
  void launch(const GpuLaunch& l, const std::vector<int>& buffers) override {
    std::vector<const OpenClDevice::Buffer*> args;
    for (int b : buffers) args.push_back(&buffers_.at(b));
    const std::array<size_t, 3> grid{size_t(l.grid[0]), size_t(l.grid[1]), size_t(l.grid[2])};
    const std::array<size_t, 3> block{size_t(l.block[0]), size_t(l.block[1]), size_t(l.block[2])};
    // Each launch waits for its kernel: the device's own clock times it.
    timed_ += device_.launch_timed(program_, l.name, args, grid, block);
  }
  void begin_timing() override { timed_ = 0; }
  double finish() override { return timed_; }

 private:
  OpenClDevice& device_;
  std::vector<OpenClDevice::Buffer> buffers_;
  OpenClDevice::Program program_;
  double timed_ = 0;
};

}  // namespace

void GpuBackend::copy_from_device_pointer(int, std::uintptr_t, size_t) {
  throw Error(device_name() + " takes device memory only through host memory (pass host arrays)");
}

void GpuBackend::copy_to_device_pointer(int, std::uintptr_t, size_t) {
  throw Error(device_name() + " gives device memory only through host memory (read outputs as host arrays)");
}

std::unique_ptr<GpuBackend> make_gpu_backend(const std::string& dialect) {
  if (dialect == "opencl") return std::make_unique<OpenClBackend>();
  if (dialect == "cuda") return make_cuda_backend();
  throw Error("no GPU backend for '" + dialect + "' (opencl, cuda)");
}

}  // namespace tessera::runtime
