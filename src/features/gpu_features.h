#pragma once
// Features of a lowered kernel as a GPU runs it, for the learned cost models
// (appended to loop_features.h's vectors; all zero for a CPU kernel, so one
// model can still compare CPU schedules and transfer between tasks). Of the
// kernel with the most work (threads x blocks x its main store's iterations
// in one thread), when the function is several:
//   0  bound: 1 when a loop is bound to blockIdx or threadIdx
//   1  log2(1+threads per block)
//   2  log2(1+blocks in the grid)
//   3  log2(1+virtual threads per thread)
//   4  log2(1+shared bytes per block)
//   5  log2(1+shared-memory loads and stores per thread) (each weighted by
//      the iterations of the thread's own loops around it)
//   6  log2(1+device-memory loads and stores per thread), likewise
//   7  log2 of the worst bank conflict among shared loads and stores:
//      gcd(|stride along threadIdx.x|, 32) for 32 banks of 4 bytes (0: none
//      or a broadcast)
//   8  log2(1+|stride|) along threadIdx.x of the device-memory stores, the
//      largest (1: coalesced)
//   9  occupancy: the threads an SM keeps resident / 2048, on an SM of 2048
//      threads, 32 blocks, 65536 registers and 164 KB of shared memory,
//      registers per thread estimated as 32 + local elements
//  10  log2(1+local (register) elements per thread)
//  11  log2(1+16 x 16 x 16 tensor-core products per warp) (tir::ForKind::
//      TensorCore; such a tile counts as one iteration of the main store,
//      and its operands as the 8 elements each lane gathers of each tile)
//  12  pipelined: 1 when a loop's fetches are loaded a step ahead, in
//      registers live across its compute (tir::ForKind::Pipelined)
#include <vector>

#include "tir/stmt.h"

namespace tessera::features {

constexpr int kGpuLength = 13;

std::vector<float> gpu_features(const tir::LoweredFunc& f);

}  // namespace tessera::features
