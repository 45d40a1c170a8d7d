#pragma once
// CUDA C and OpenCL C from the loop IR: one translation unit holding every
// kernel of a lowered function (tir/device_program.h), readable (tessera op
// --show prints it). The two dialects differ only in spelling: the block and
// thread indices (blockIdx.x / get_group_id(0)), memory qualifiers
// (__shared__ / __local, __global), barriers (__syncthreads() /
// barrier(CLK_LOCAL_MEM_FENCE)) and math functions (expf / exp). Loops bound
// to a block or thread axis become that index (the launch covers each such
// loop exactly); shared buffers are declared at the top of their kernel.
#include <string>

#include "target/target.h"
#include "tir/device_program.h"

namespace tessera::codegen {

enum class GpuDialect { Cuda, OpenCl };

struct GpuSource {
  std::string code;
  tir::DeviceProgram program;  // the kernels, their parameters and launch grids
};

// Runs the GPU codegen passes on f (tir::prepare_for_gpu_codegen), splits it
// into kernels, pads the rows of their tensor-core tiles in shared memory
// (tir/pad_tensor_core_rows.h), checks them against `limits`
// (tir/verify_gpu.h) and writes them. Throws tessera::Error naming the kernel and what cannot run.
GpuSource emit_gpu_source(const tir::LoweredFunc& f, const target::GpuLimits& limits, GpuDialect dialect);

}  // namespace tessera::codegen
