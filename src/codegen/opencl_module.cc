#include "codegen/opencl_module.h"

#include "runtime/opencl_device.h"
#include "tessera/error.h"

namespace tessera::codegen {

namespace {

size_t bytes_of(const ir::Tensor& t) { return static_cast<size_t>(t->num_elements()) * sizeof(float); }

}  // namespace

struct OpenClModule::Impl {
  runtime::OpenClDevice& device = runtime::OpenClDevice::get();
  GpuSource source;
  runtime::OpenClDevice::Program program;
  // One device buffer per argument, then per workspace tensor.
  std::vector<runtime::OpenClDevice::Buffer> buffers;
  std::vector<std::vector<const runtime::OpenClDevice::Buffer*>> kernel_args;

  Impl(const tir::LoweredFunc& f, const target::GpuLimits& limits)
      : source(emit_gpu_source(f, limits, GpuDialect::OpenCl)), program(device.build(source.code)) {
    const tir::DeviceProgram& p = source.program;
    std::vector<ir::Tensor> all = p.args;
    all.insert(all.end(), p.workspace.begin(), p.workspace.end());
    for (const ir::Tensor& t : all) buffers.push_back(device.allocate(bytes_of(t)));
    for (const tir::DeviceKernel& k : p.kernels) {
      std::vector<const runtime::OpenClDevice::Buffer*> args;
      for (const ir::Tensor& param : k.params)
        for (size_t i = 0; i < all.size(); ++i)
          if (all[i] == param) args.push_back(&buffers[i]);
      kernel_args.push_back(std::move(args));
    }
  }

  double launch_all(bool timed) {
    double seconds = 0;
    const auto& kernels = source.program.kernels;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const auto& k = kernels[i];
      const std::array<size_t, 3> grid{size_t(k.grid[0]), size_t(k.grid[1]), size_t(k.grid[2])};
      const std::array<size_t, 3> block{size_t(k.block[0]), size_t(k.block[1]), size_t(k.block[2])};
      if (timed) seconds += device.launch_timed(program, k.name, kernel_args[i], grid, block);
      else device.launch(program, k.name, kernel_args[i], grid, block);
    }
    return seconds;
  }
};

OpenClModule::OpenClModule(const tir::LoweredFunc& f, const target::GpuLimits& limits)
    : impl_(std::make_unique<Impl>(f, limits)) {}
OpenClModule::~OpenClModule() = default;
OpenClModule::OpenClModule(OpenClModule&&) noexcept = default;

const GpuSource& OpenClModule::source() const { return impl_->source; }

void OpenClModule::run(const std::vector<float*>& args) {
  const auto& p = impl_->source.program;
  if (args.size() != p.args.size())
    throw Error("OpenCL kernel " + p.name + ": " + std::to_string(args.size()) + " arrays for " +
                std::to_string(p.args.size()) + " arguments");
  for (size_t i = 0; i < args.size(); ++i) impl_->device.write(impl_->buffers[i], args[i], bytes_of(p.args[i]));
  impl_->launch_all(false);
  for (size_t i = 0; i < args.size(); ++i) impl_->device.read(impl_->buffers[i], args[i], bytes_of(p.args[i]));
}

double OpenClModule::run_timed() { return impl_->launch_all(true); }

}  // namespace tessera::codegen
