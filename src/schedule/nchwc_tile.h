#pragma once
// The register-tiled NCHWc convolution schedule, in one home: the hand-written
// default (manual_schedule.h) and the x86 templates build their traces here.
//
// The output is cut into tiles of oc_bn channel blocks x oh_bn rows x ow_bn
// columns, each accumulated in vector registers (the tile stage computed at the
// output's tile loop) across the whole reduction.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/compute_dag.h"
#include "schedule/iter_names.h"
#include "schedule/trace.h"
#include "schedule/vector_unit.h"

namespace tessera::schedule {

// Output-channel blocks x output columns held in registers.
struct RegisterTile {
  int64_t oc = 1, ow = 1;
};

// The default register tile of a conv with `chunks` output-channel blocks of
// `block` channels and `width` output columns, `group_chunks` of the blocks
// reading the same input (a group's; 0: all of them). With broadcast
// operands: one block, the widest divisor of the width within 24 vectors.
// Without: 4, 2 or 3 blocks, the first that divides `group_chunks` (else 1):
// a tile's blocks share each broadcast input value, which blocks of
// different groups cannot; then the most columns whose accumulators, live
// broadcasts and a weight vector fit the register file; the width need not
// divide the row (tir::partition_loops keeps the guards out of the steady
// state).
RegisterTile nchwc_register_tile(int64_t chunks, int64_t block, int64_t width, const VectorUnit& unit,
                                 int64_t group_chunks = 0);

// The output-channel blocks of a conv2d_nchwc stage that read the same input
// channels: all of them, or a group's when it is grouped.
int64_t nchwc_chunks_per_group(const ir::Tensor& conv);

// rows == 0: each register tile accumulates across the whole reduction, so
// the weights of its chunks stream through once per tile. rows > 0: the tile
// stage is a stack buffer of oc_bn chunks x `rows` rows x `cols` columns (0:
// the whole width; a 1x1 convolution over flattened positions has one row of
// OH*OW), computed at the output's group loop, and the outer reduce loop
// (input-channel blocks) runs outside the register tiles, `ic_blocks` per
// pass: a slice of weights is read once per group, from L1, and each input
// block streams through in order. Pays where weights are large and images
// small (ResNet's 7x7 and 14x14 layers, whose weights stream from L3
// otherwise) and for 1x1 layers with many input channels. The plan's
// tile_order then names the tile stage's split columns (ow.0, ow.1), rows
// with oh_bn > 1 (oh.0, oh.1) and input-channel blocks when split
// (ic_outer.0, ic_outer.1).
struct AccumulatorBuffer {
  int64_t rows = 0, cols = 0;
  // Input-channel blocks per pass over the buffer: 0 or 1 (ic_outer
  // outermost), all of them (ic_outer inside the register tiles' rows and
  // columns), or a split in between.
  int64_t ic_blocks = 0;
};

struct NchwcTilePlan {
  int64_t oh_bn = 1, ow_bn = 1;
  // Output-channel chunks (blocks of one vector) per tile. More than one lets
  // each broadcast input value feed several weight vectors; the tile stage's
  // chunk axis (extent oc_bn) must then sit among the unrolled tile loops.
  int64_t oc_bn = 1;
  // Every iterator of the tile stage (its axis and reduce names), outermost
  // first.
  std::vector<std::string> tile_order;
  std::vector<std::string> tile_unroll;  // tile iterators to unroll
  // How many of the output's outer loops (n, chunk(.0), oh(.0), ow.0) are
  // fused into the parallel loop: 2, 3 or 4.
  int parallel_fuse = 3;
  // The padding stage: "root" (computed once, in parallel), "inline" (read
  // through a bounds check), "tile" (computed at the tile's outermost reduce
  // loop).
  std::string pad = "root";
  // Where the tile accumulates: registers, or a buffer of rows (see
  // AccumulatorBuffer).
  AccumulatorBuffer buffer;
  // An int8 convolution's fifth reduce axis (ic_4, the 4 bytes of a 32-bit
  // lane: ops::qlinear_conv2d_nchwc): placed just outside the channel block
  // and annotated dot_product. Empty for fp32 convolutions.
  std::string dot_product;
};

schedule::Trace nchwc_tile_trace(const ir::ComputeDAG& dag, const std::string& tag, const NchwcTilePlan& plan);

// The start of a conv tile's order: n, then the chunk and row axes whose tile
// extent (oc_bn, oh_bn) is 1. These stay outside the reduction, as in the
// hand-written schedule; a template places the others inside it, unrolled.
// `axes`: the conv stage's n, chunk, oh, ow, block.
std::vector<std::string> nchwc_outer_tile_axes(const NchwcTilePlan& plan, const std::vector<std::string>& axes);

// The plan of a conv2d_nchwc stage with a KHxKW window: the outer tile axes,
// the reduction (ic_outer, ry, rx in `reduce_order`, then ic_inner), then the
// tile's chunks, rows and columns unrolled (and rx when `unroll_kw`), the
// channel block innermost (an int8 stage's ic_4 just outside it). With a
// buffer of rows, ic_outer goes first, then the register tiles' rows and
// columns, then ry and rx.
NchwcTilePlan conv_window_tile_plan(const ir::Tensor& conv, int64_t oc_bn, int64_t oh_bn, int64_t ow_bn,
                                    const std::vector<int>& reduce_order = {0, 1, 2}, bool unroll_kw = false,
                                    AccumulatorBuffer buffer = {});

// The row counts worth offering as AccumulatorBuffer::rows for an output of
// `rows` x `width` positions: divisors of the rows whose buffer holds at most
// 256 positions (32 KB of accumulators for 4 chunks of 8 lanes).
std::vector<int64_t> accumulator_row_choices(int64_t rows, int64_t width);

// The hand-written schedule's buffer for `conv` with register tile `tile`.
// Kernels with a window: the most rows on offer when the weights one register
// tile reads (its chunks x every input channel x the window) exceed half of a
// 512 KB L2, so that they would stream from L3 once per tile; else none.
// 1x1 kernels over flattened positions, when a register tile's weights
// exceed a 32 KB L1: groups of up to 128 positions, 8 input-channel blocks per
// pass (each block's input then streams through in order, not 8 lanes from
// each of every plane per register tile). Measured on Zen 3 (AVX2, 1 thread,
// weights warm): ResNet-18's 512->512 7x7 layer 65 -> 81 GFLOPS, its 14x14
// layers unchanged with the buffer, its 28x28 and 56x56 ones 2-5 % slower
// (small weights, which L2 holds anyway); ResNet-50's 1x1 layers with 512 or
// 1024 input channels 68-76 -> 88-92 GFLOPS, with 64-256 (tiles' weights
// within L1) 5-10 % slower.
AccumulatorBuffer default_accumulator_buffer(const ir::Tensor& conv, const RegisterTile& tile);

// The hand-written schedule's NchwcTilePlan::parallel_fuse for `conv`: 3
// (n, chunk groups, rows), or 4 (the column tiles too) when those give fewer
// than 16 iterations to share among the threads; a 1x1 kernel over flattened
// positions with few output chunks (MobileNet-v2's 16- and 32-channel layers)
// otherwise ran on one thread. Column tiles in the parallel loop must divide
// the width (a ragged tail inside it is not partitioned away: every tile
// would pay the guards), so `tile.ow` may shrink to a divisor, down to 2 less.
int default_parallel_fuse(const ir::Tensor& conv, RegisterTile& tile);

// Stage helpers shared with the templates.
ir::Tensor stage_by_tag(const ir::ComputeDAG& dag, const std::string& tag, const std::string& who);
std::vector<std::string> axis_names(const ir::Tensor& t);
std::vector<std::string> reduce_names(const ir::Tensor& t);

}  // namespace tessera::schedule
