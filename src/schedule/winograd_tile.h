#pragma once
// The schedule of a Winograd convolution (ops/winograd.h), in one home:
// the hand-written default and the x86 template build their traces here.
//
// Four phases, each a parallel loop of its own: the zero padding; the input
// transform, one tile of one channel block per iteration with its alpha^2
// outputs unrolled (so that the transform's selects fold to the terms of
// each output) and the channel block vectorised; the batched matrix product,
// register-tiled like a 1x1 NCHWc convolution over the tiles (tile_oc chunks
// x tile_t tiles of accumulators live across the whole input-channel
// reduction); and the output transform with the epilogue, one m x m output
// tile per iteration, unrolled.
#include <cstdint>

#include "ir/compute_dag.h"
#include "schedule/trace.h"
#include "schedule/vector_unit.h"

namespace tessera::schedule {

struct WinogradPlan {
  // Output-channel chunks and Winograd tiles held in registers by the product.
  int64_t tile_oc = 1, tile_t = 1;
};

// Without broadcast operands (AVX2): eight accumulators, up to 4 chunks. With
// them: the register tile nchwc_register_tile gives a 1x1 convolution over
// the tiles (not measured on such a host yet).
WinogradPlan default_winograd_plan(const ir::ComputeDAG& dag, const VectorUnit& unit);
Trace winograd_trace(const ir::ComputeDAG& dag, const WinogradPlan& plan);

}  // namespace tessera::schedule
