#pragma once
// Hand-written schedules for GPUs (blocks of threads, shared memory): what a
// network compiled for cuda or opencl runs when no record applies, and what
// the GPU tuner must beat.
#include <optional>

#include "schedule/trace.h"

namespace tessera::schedule {

// Any DAG: elementwise intermediates inlined; every other stage one kernel,
// its spatial loops fused and spread one output element per thread over
// blocks of up to `max_threads` threads (a reduction runs serially in its
// thread). Correct for every operator, fast for the memory-bound ones.
Trace gpu_default_schedule(const ir::ComputeDAG& dag, int max_threads);

// A matrix product stage (dense (M, N) = A (M, K) . W (N, K)^T, or
// batch_matmul's (B, M, N)) of at least one tile (64 x 64 by default): each
// block computes a tile with 16 x 16 threads, each thread a 4 x 4 tile in
// registers; the block's slices of both operands are staged in shared
// memory, 8 along K at a time, each thread fetching its share. Elementwise
// consumers (bias, activation) run in the threads' epilogue. Nothing when
// the DAG holds no such product, or it is too small to fill one tile.
// The tile of that schedule: threads_y x threads_x threads per block, each
// computing rows x cols outputs, K staged step_k at a time (what the GPU
// dense template's knobs choose).
struct GpuMatmulPlan {
  int64_t threads_y = 16, threads_x = 16, rows = 4, cols = 4, step_k = 8;
};
std::optional<Trace> gpu_matmul_schedule(const ir::ComputeDAG& dag, int max_threads, const GpuMatmulPlan& plan = {});

// The best of the above for a DAG.
Trace best_gpu_schedule(const ir::ComputeDAG& dag, int max_threads);

}  // namespace tessera::schedule
