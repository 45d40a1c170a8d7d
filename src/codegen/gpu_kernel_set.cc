#include "codegen/gpu_kernel_set.h"

#include <algorithm>

#include "codegen/gpu_source.h"
#include "codegen/nvrtc_compiler.h"
#include "tessera/error.h"

namespace tessera::codegen {

GpuKernelSet::GpuKernelSet(const target::Target& target) : target_(target) {
  code_.dialect = target.kind;
  code_.arch = target.kind == "cuda" ? target.gpu.arch : 0;
}

void GpuKernelSet::add(const tir::LoweredFunc& f) {
  const GpuSource source = emit_gpu_source(
      f, target_.gpu, target_.kind == "cuda" ? GpuDialect::Cuda : GpuDialect::OpenCl);
  const tir::DeviceProgram& p = source.program;
  runtime::GpuKernel kernel;
  for (const ir::Tensor& w : p.workspace) kernel.workspace.push_back(w->num_elements());
  // A parameter is the function's argument i (the call's inputs, then
  // outputs), or workspace buffer j after them.
  auto position = [&](const ir::Tensor& t) {
    auto a = std::find(p.args.begin(), p.args.end(), t);
    if (a != p.args.end()) return static_cast<int>(a - p.args.begin());
    auto w = std::find(p.workspace.begin(), p.workspace.end(), t);
    return static_cast<int>(p.args.size() + (w - p.workspace.begin()));
  };
  for (const tir::DeviceKernel& k : p.kernels) {
    runtime::GpuLaunch launch{k.name, k.grid, k.block, {}};
    for (const ir::Tensor& t : k.params) launch.params.push_back(position(t));
    kernel.launches.push_back(std::move(launch));
  }
  code_.kernels[f.name] = std::move(kernel);
  code_.source += source.code + "\n";
}

runtime::GpuCode GpuKernelSet::finish() {
  if (target_.kind == "cuda") {
    const std::string why = nvrtc_unavailable_reason();
    if (!why.empty()) throw Error("compiling for '" + target_.str() + "' needs NVRTC: " + why);
    CudaBinary binary = compile_cuda(code_.source, target_.gpu.arch, "the network's kernels");
    code_.cubin = std::move(binary.cubin);
    code_.ptx = std::move(binary.ptx);
  }
  return code_;
}

}  // namespace tessera::codegen
