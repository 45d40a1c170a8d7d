#pragma once
// Per-store features (Ansor's): one fixed-length vector for every store
// statement of a lowered kernel, so that a cost model can score each store
// and add the scores up (the kernel's cost is the sum of what its stores
// cost). Nothing refers to a config space or a template: any schedule of
// any DAG has these features, which is what the template-free search needs.
//
// Every quantity that spans orders of magnitude is log2(1 + x). "Iterations"
// of a store: the product of the extents of its enclosing loops. Values are
// finite and deterministic.
//
// Group 1, computation (kComputeFeatures):
//   float operations executed by the store over all its iterations:
//   add/sub, mul, div, min/max, comparisons and selects, math calls (exp,
//   log, ...); then for each loop kind (vectorized, unrolled, parallel): the
//   product of the extents of the enclosing loops of that kind, how many
//   there are, and whether the innermost enclosing loop is of that kind.
// Group 2, buffer access, kStoreBuffers slots of kPerStoreBuffer (the buffer
//   written first, then the buffers read, by bytes touched, largest first):
//   written flag, read flag; bytes accessed (iterations x element bytes);
//   distinct bytes touched; cache lines accessed (64-byte lines: an access
//   whose innermost stride is small shares its line with its neighbours);
//   distinct lines touched; reuse kind one-hot (reused across a loop that
//   does not index it / read and written by the store, an accumulator / no
//   reuse); reuse distance in iterations (those under the innermost loop
//   that does not index the buffer) and in bytes (every buffer's distinct
//   bytes under those loops); reuse count (that loop's extent); |stride| of the innermost loop; whether the index
//   depends on the innermost loop non-linearly (floordiv, floormod).
// Group 3, arithmetic intensity curve (kIntensitySamples): float operations
//   under a loop / distinct bytes touched under it, at every loop of the
//   nest, sampled at evenly spaced depths from the innermost loop out.
// Group 4, allocation (kAllocationFeatures): for a store into a scratch
//   buffer (Allocate): its bytes, how many times it is allocated (the
//   iterations of the loops outside the Allocate), and a flag.
// Group 5, outer scope (kScopeFeatures): iterations of the store, number of
//   enclosing loops, whether a condition guards it.
// Group 6, the GPU (kGpuLength, features/gpu_features.h): threads and blocks,
//   shared memory and its bank conflicts, coalescing, occupancy, of the
//   function's heaviest kernel, the same in every row (all zero on a CPU).
#include <vector>

#include "features/gpu_features.h"
#include "tir/stmt.h"

namespace tessera::features {

constexpr int kComputeFeatures = 6 + 3 * 3;
constexpr int kStoreBuffers = 5;
constexpr int kPerStoreBuffer = 14;
constexpr int kIntensitySamples = 10;
constexpr int kAllocationFeatures = 3;
constexpr int kScopeFeatures = 3;
constexpr int kStoreFeatureLength = kComputeFeatures + kStoreBuffers * kPerStoreBuffer + kIntensitySamples +
                                    kAllocationFeatures + kScopeFeatures + kGpuLength;

// One vector of kStoreFeatureLength per store, in program order.
std::vector<std::vector<float>> store_features(const tir::LoweredFunc& f);

}  // namespace tessera::features
