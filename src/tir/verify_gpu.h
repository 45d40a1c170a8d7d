#pragma once
// The GPU verifier: what a device cannot run, or would run wrongly, as one
// line naming the kernel and the reason. Checked before any GPU code is
// written (TVM's verify_gpu_code, plus the SPMD rules our lowering relies on):
// - the block's threads and shared bytes within the target's limits, each
//   grid and block axis within the hardware's (x: 2^31-1 blocks, y, z: 65535;
//   threads x, y: 1024, z: 64);
// - every loop bound to one axis with one extent (tir/device_program.h);
// - no blockIdx loop inside another loop (blocks run once each), no
//   CPU-parallel loop;
// - every store to device or shared memory inside the thread loops, when the
//   kernel has threads (else all threads would write it);
// - no barrier under a condition that depends on the thread (threads that
//   skip it would leave the others waiting);
// - some block or thread binding in every kernel (one thread cannot run a
//   whole stage fast enough to be meant);
// - tensor-core tiles (ForKind::TensorCore) only for sm_80 and later, in
//   blocks whose x extent is whole warps, outside threadIdx.x loops and
//   thread-dependent conditions (all lanes of a warp run them alike).
#include "schedule/gpu_schedule.h"
#include "target/target.h"
#include "tir/device_program.h"

namespace tessera::tir {

void verify_gpu(const DeviceProgram& program, const target::GpuLimits& limits);

// What the hand-written GPU schedules may put in a block: the limits this
// verifier holds them to.
inline schedule::GpuBlockLimits gpu_block_limits(const target::Target& t) {
  return {t.gpu.max_threads_per_block, t.gpu.max_shared_memory_per_block};
}

}  // namespace tessera::tir
