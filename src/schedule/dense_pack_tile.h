#pragma once
// The register-tiled schedule of a dense with packed weights (ops::dense_pack),
// in one home: the hand-written default (manual_schedule.h) and the
// dense_pack.x86 template build their traces here.
//
// The output is cut into tiles of ty rows x tx weight blocks (of bn outputs
// each), or ty rows x `lanes` columns of one block where a block is wider than
// the registers hold for several rows, accumulated in vector registers across
// K; K can be split by tk and its inner part unrolled.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/compute_dag.h"
#include "schedule/trace.h"
#include "schedule/vector_unit.h"

namespace tessera::schedule {

struct DensePackPlan {
  int64_t ty = 1, tx = 1, tk = 1;
  // Columns of a block per tile (0: the whole block). A part of a block: its
  // parts, then the blocks, loop outside the rows, so each tile is ty rows x
  // `lanes` columns of one block and tx only orders the loops.
  int64_t lanes = 0;
  bool unroll_k = false;
  // The parallel loop: "fused" (row tiles and column tiles fused), "rows" or "cols".
  std::string parallel = "fused";
};

// Weight blocks (of bn columns) per register tile of a packed dense with
// `blocks` blocks: the largest divisor giving about 12 vector accumulators.
int64_t dense_pack_tile(int64_t blocks, int64_t bn, const VectorUnit& unit);

// The parts a block of bn columns can be tiled in: its halves, their halves
// and so on while they are whole vectors of the unit, widest first.
std::vector<int64_t> dense_pack_block_parts(int64_t bn, const VectorUnit& unit);

// The hand-written plan for an (m, k) x (k, blocks * bn) dense. One row (a
// classifier's batch 1): a row of tiles, K whole. Several rows (a
// transformer's tokens): tiles of up to 6 rows (the last one guarded where
// 6 does not divide M), so each weight vector loaded serves them all, within
// three quarters of the vector registers as accumulators; the column tiles
// outermost and parallel, so one weight block stays in cache while every row
// passes it (fewer than 8 of them with a weight within L2: fused with the
// rows, which share out evenly); K split by 8 and unrolled. On AVX-512 with
// 128x768x3072 this ran 12x faster than the one-row plan (11 -> 136 GFLOPS,
// oneDNN 128). 6 rows instead of 4 measured 1.04x oneDNN against 0.95x at
// 128x3072x768 (medians of 4 interleaved runs), the same at BERT's other two
// shapes. A block wider than the accumulators hold for 6 rows (64 columns on
// AVX2: 8 vectors of 16 registers) is tiled in parts of it (16 columns: 6
// rows x 2 vectors), not 1 row x 8 vectors, which loads a weight vector per
// FMA: BERT's four shapes at 128 tokens ran 1.7-2.7x faster on 2 Zen 3
// cores, level with oneDNN (128x3072 -> 768: 61.7 -> 167.9 GFLOPS, oneDNN
// 159.3).
DensePackPlan dense_pack_default_plan(int64_t m, int64_t k, int64_t blocks, int64_t bn, const VectorUnit& unit);

// The trace of `plan` for the DAG's stage tagged `tag`: "dense_pack", or
// "qlinear_dense_pack" (ops/qlinear_dense.h), whose second reduce axis (the
// 4 bytes of a lane) goes just outside the lanes as a byte dot product.
Trace dense_pack_tile_trace(const ir::ComputeDAG& dag, const DensePackPlan& plan,
                            const std::string& tag = "dense_pack");

}  // namespace tessera::schedule
