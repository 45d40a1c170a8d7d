#pragma once
// The best hand-written schedules we know for the operators that matter most;
// the tuner's job is to beat them. Falls back to default_schedule.
#include "schedule/trace.h"

namespace tessera::schedule {

// conv2d NCHW[x]c: the output tile of `reg_n` output columns x oc_bn channels
// stays in vector registers across the whole reduction (cache_write + compute_at),
// the padding is materialised once, the outer loops run in parallel.
// vector_bits: the target's widest fp32 vector (codegen::Target::vector_bits);
// reg_n = 0 picks the tile height from it.
Trace conv2d_nchwc_schedule(const ir::ComputeDAG& dag, int vector_bits, int64_t reg_n = 0);

// dense with packed weights: each thread owns tiles of `tile` weight blocks,
// whose accumulators stay in registers across the whole K loop.
Trace dense_pack_schedule(const ir::ComputeDAG& dag, int vector_bits);

Trace best_manual_schedule(const ir::ComputeDAG& dag, int vector_bits);

}  // namespace tessera::schedule
