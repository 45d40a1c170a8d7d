#pragma once
// Feature vectors of a lowered kernel for learned cost models. They describe
// the kernel's main loop nest (the nest around its most executed store) and
// how that nest walks memory, so that one model can compare schedules of one
// DAG, and, because nothing here depends on a config space, schedules of
// different DAGs (transfer learning).
//
// Both vectors have a fixed length, are deterministic, and hold finite values
// only. Quantities that span orders of magnitude are log2(1 + x).
//
// Terms used below:
//  - main store: the store executed most often (product of the extents of its
//    enclosing loops); its loops, outermost first, are the main nest.
//  - accesses: the buffer the main store writes plus every buffer its value
//    reads; one slot per buffer (several reads of one buffer share the slot,
//    the first read in the expression decides the strides). Buffers are sorted
//    by bytes touched by the whole nest, largest first, then by name;
//    kBufferSlots are kept, missing ones are zero.
//  - under loop L: the iterations of L and every loop inside it, outer loop
//    variables held fixed. touched(L) = distinct bytes of a buffer accessed
//    under L (per-dimension index ranges, capped by the iteration count);
//    reuse(L) = accesses under L / distinct elements touched under L.
#include <vector>

#include "features/gpu_features.h"
#include "tir/stmt.h"

namespace tessera::features {

constexpr int kItervarLoops = 8;   // innermost loops described by itervar_features
constexpr int kBufferSlots = 3;    // buffers described per loop / per curve
constexpr int kCurveSamples = 12;  // sample points per curve

// Per-buffer values for one loop: 5 floats.
//   log2(1+|stride|) of the flattened (row-major) index w.r.t. the loop var,
//   non-linear flag (1 when the index depends on the loop through a floordiv,
//   floormod or product that linear_form cannot see through),
//   log2(1+touched bytes under the loop), log2(1+reuse under the loop),
//   is-written flag (1 for the buffer the main store writes).
constexpr int kPerBuffer = 5;
// Per loop: present flag, log2(1+extent), kind one-hot (serial, parallel,
// vectorized, unrolled), log2(1+product of the extents of the loops outside
// it), then kBufferSlots x kPerBuffer.
constexpr int kPerLoop = 7 + kBufferSlots * kPerBuffer;
// Header: log2(1+iterations of the main nest), log2(1+iterations of every
// other store), number of stores, depth of the main nest.
constexpr int kItervarHeader = 4;
constexpr int kItervarLength = kItervarHeader + kItervarLoops * kPerLoop + kGpuLength;

// The header, then the innermost kItervarLoops loops of the main nest,
// innermost first, zero padded when the nest is shallower, then the GPU
// features (gpu_features.h; zeros for a CPU kernel). A loop bound to a
// block, thread or virtual thread counts as serial in the kind one-hot: the
// GPU features describe the binding.
std::vector<float> itervar_features(const tir::LoweredFunc& f);

// Curves over x = log2(iterations under a loop), sampled at x_k = 2.5 k for
// k < kCurveSamples and interpolated linearly between the loops of the main
// nest (held constant beyond the innermost / outermost loop):
//   per buffer slot: touched bytes curve log2(1+touched), reuse curve
//   log2(1+reuse), stride curve log2(1+|stride|) of the loop covering x_k;
//   then three curves shared by all buffers: whether the loop covering x_k is
//   vectorized, unrolled, parallel.
// The length does not depend on the number of loops.
constexpr int kCurveLength = (kBufferSlots * 3 + 3) * kCurveSamples + 1 + kGpuLength;
// The curves above, then log2(1+iterations of every other store), then the
// GPU features.
std::vector<float> curve_features(const tir::LoweredFunc& f);

}  // namespace tessera::features
