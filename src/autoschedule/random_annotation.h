#pragma once
// Random annotation (Ansor's initial population): fills every site of a
// sketch. Tile lengths are a uniformly drawn factorisation of the axis (inner
// length at most kMaxInnermostFactor), except that an axis whose innermost
// loop is vectorized gets a full vector of the target there half the time
// (kFullVectorProbability); a parallel site fuses the fewest outer
// loops that give every thread several iterations; a vectorize site is on
// when its loop has 2 to 64 iterations, a cooperative fetch's lanes half
// the time; unroll, compute location and pipelining are
// drawn uniformly. On a GPU the tiles are drawn again while a block holds
// more threads than the target allows.
#include <cstdint>
#include <random>
#include <vector>

#include "autoschedule/sketch.h"
#include "autoschedule/sketch_rule.h"

namespace tessera::autoschedule {

inline constexpr int64_t kMaxInnermostFactor = 64;
inline constexpr double kFullVectorProbability = 0.5;
inline constexpr int64_t kMaxVectorizeExtent = 64;
// Iterations per thread a parallel loop should have at least (load balance).
inline constexpr int64_t kParallelIterationsPerThread = 4;
// Draws of the tiles before a GPU sketch's params are kept with a block
// over the target's thread limit (the GPU verifier then refuses them).
inline constexpr int kBlockAttempts = 64;

// Every `count`-tuple of lengths whose product divides `extent` and whose last
// is at most kMaxInnermostFactor, in a fixed order (memoised; the tuples of
// one extent and count are computed once per process).
const std::vector<std::vector<int64_t>>& factorizations(int64_t extent, int count);

SketchParams random_params(const Sketch& sketch, const SketchContext& ctx, std::mt19937_64& rng);

// The sites that depend on the loops' extents, chosen for the tiles in
// `params` as random_params does: after a tile mutation the old vectorize
// choices may no longer fit.
void choose_vectorize(const Sketch& sketch, SketchParams& params);
void choose_parallel(const Sketch& sketch, const SketchContext& ctx, SketchParams& params);
// Whether every GPU block of `sketch` holds at most the target's threads.
bool fits_blocks(const Sketch& sketch, const SketchContext& ctx, const SketchParams& params);

}  // namespace tessera::autoschedule
