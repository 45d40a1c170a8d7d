#pragma once
// A cooperative fetch into shared memory staged through registers: all its
// loads first, then its stores.
//
// A fetch is a loop of a few steps around the block's threads, each thread
// copying one element a step, often under the fetch's bound (the last
// step's threads past the tile do nothing) and, for a padded window, the
// element read under the padding's check:
//
//   for s in 0..4:  for t (threadIdx):  if (s*224 + t < 768)  cache[..] = inside ? data[..] : 0
//
// Written so, a step's store needs its load: unless the device compiler
// unrolls the loop and predicates the load (ptxas, CUDA 13, sm_90, does
// neither for the window fetches of the hand-written direct convolutions:
// it branches around each load and awaits it before the store), a thread
// waits one memory latency per step, in a row. Staged, the steps are
// unrolled, each load goes to a register (under its conditions, one
// predicate; zero where they fail), all of them in flight at once, and the
// stores follow:
//
//   for s (unrolled):  for t:  staged[s] = (s*224 + t < 768) & inside ? data[..] : 0
//   for s (unrolled):  for t:  if (s*224 + t < 768)  cache[..] = staged[s]
//
// A ResNet-18 3x3 convolution at batch 1 in fp32 (its window in 4 steps,
// its weights in 11): 10 divergent regions -> 2 (bench/gpu/sass_census.py).
// Fetches whose store reads memory and whose registers a thread (a step's
// element or vector each) are at most `max_registers`. Inside a pipelined
// loop (tir/pipeline_fetches.h, which then loads them a step ahead) also a
// fetch of one step, and a vectorized copy (16 bytes a lane, kept one move
// under its bound); elsewhere not those: ptxas already issues their loads
// before their stores.
#include "tir/stmt.h"

namespace tessera::tir {

// 32: ResNet-18's layer3 3x3 convolutions at batch 1 fetch their weights in
// 21 steps of 224 threads; staged, their kernels take 56 registers instead
// of 32, spill nothing, and each step's 21 loads are in flight together
// instead of one after another (at 16 steps, the limit before, they were
// not staged). Fetches of 16-byte vectors: 8 steps.
inline constexpr int64_t kMaxStagedRegisters = 32;
Stmt stage_fetches(const Stmt& s, int64_t max_registers = kMaxStagedRegisters);

}  // namespace tessera::tir
