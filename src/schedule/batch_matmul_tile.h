#pragma once
// The register-tiled schedule of batch_matmul (ops::batch_matmul), in one
// home: the hand-written default (manual_schedule.h) and the
// batch_matmul.x86 template build their traces here.
//
// C[b, i, j] = sum_k A[b, i, k] * Bt[b, k, j], where Bt is the kernel's own
// transposed copy of B (stage "batch_matmul_transpose_b", computed first, in
// parallel over batches): the columns j a vector holds are then contiguous.
// The output is cut into tiles of ty rows x tx columns (tx a multiple of the
// vector lanes), accumulated in registers across K (or in memory, without
// the cache); K can be split by tk and its inner part unrolled.
#include <cstdint>
#include <string>

#include "ir/compute_dag.h"
#include "schedule/trace.h"
#include "schedule/vector_unit.h"

namespace tessera::schedule {

struct BatchMatmulPlan {
  int64_t ty = 1, tx = 1, tk = 1;
  bool unroll_k = false;
  bool cache_write = true;  // accumulate a tile in registers
  // The parallel loop: "batch_rows" (batches and row tiles fused) or "batch".
  std::string parallel = "batch_rows";
};

// Up to 4 rows x two vectors of columns, the largest that divide M and N.
BatchMatmulPlan batch_matmul_default_plan(int64_t m, int64_t n, const VectorUnit& unit);

// The trace of `plan` for the DAG's stage tagged `tag`: "batch_matmul", or
// "qlinear_batch_matmul" (ops/qlinear_batch_matmul.h: the same loops over
// bytes, accumulated in int32, its requantization the output stage).
Trace batch_matmul_tile_trace(const ir::ComputeDAG& dag, const BatchMatmulPlan& plan,
                              const std::string& tag = "batch_matmul");

}  // namespace tessera::schedule
