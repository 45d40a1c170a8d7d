#pragma once
// A network's kernels for a GPU target (cuda, opencl): each graph kernel's
// loops written as device kernels into one source (codegen/gpu_source.h),
// with the launches the runtime makes for it; for cuda the source compiled
// by NVRTC, once, to a cubin for the target's arch and its PTX.
#include <string>

#include "runtime/gpu_code.h"
#include "target/target.h"
#include "tir/stmt.h"

namespace tessera::codegen {

class GpuKernelSet {
 public:
  explicit GpuKernelSet(const target::Target& target);
  // Adds graph kernel `f` (named as the executable graph calls it); throws
  // tessera::Error naming it when the GPU verifier rejects it.
  void add(const tir::LoweredFunc& f);
  // The code of every kernel added; for cuda compiled (throws naming what
  // NVRTC rejected, or why NVRTC is missing).
  runtime::GpuCode finish();

 private:
  const target::Target& target_;
  runtime::GpuCode code_;
};

}  // namespace tessera::codegen
