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
// `block` channels and `width` output columns. With broadcast operands: one
// block, the widest divisor of the width within 24 vectors. Without: the most
// blocks (up to 4) dividing `chunks`, then the most columns whose accumulators,
// live broadcasts and a weight vector fit the register file; the width need not
// divide the row (tir::partition_loops keeps the guards out of the steady state).
RegisterTile nchwc_register_tile(int64_t chunks, int64_t block, int64_t width, const VectorUnit& unit);

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
  // 0: each register tile accumulates across the whole reduction, so the
  // weights of its chunks stream through once per tile. r > 0: the tile stage
  // is a stack buffer of oc_bn chunks x r rows x the whole width, computed at
  // the output's row-group loop, and the outermost reduce loop (input-channel
  // blocks) runs outside its rows and columns: a slice of weights is read
  // once per r rows, from L1. Pays where weights are large and images small
  // (ResNet's 7x7 and 14x14 layers, whose weights stream from L3 otherwise).
  // tile_order then names the tile stage's split columns (ow.0, ow.1) and,
  // with oh_bn > 1, rows (oh.0, oh.1).
  int64_t acc_rows = 0;
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
// channel block innermost. With `acc_rows` > 0 (see NchwcTilePlan), ic_outer
// goes first, then the register tiles' rows and columns, then ry and rx.
NchwcTilePlan conv_window_tile_plan(const ir::Tensor& conv, int64_t oc_bn, int64_t oh_bn, int64_t ow_bn,
                                    const std::vector<int>& reduce_order = {0, 1, 2}, bool unroll_kw = false,
                                    int64_t acc_rows = 0);

// The row counts worth offering as NchwcTilePlan::acc_rows for an output of
// `rows` x `width` positions: divisors of the rows whose buffer holds at most
// 256 positions (32 KB of accumulators for 4 chunks of 8 lanes).
std::vector<int64_t> accumulator_row_choices(int64_t rows, int64_t width);

// The hand-written schedule's acc_rows for `conv` with register tile `tile`:
// the most rows on offer when the weights one register tile reads (its
// chunks x every input channel x the window) exceed half of a 512 KB L2, so
// that they would stream from L3 once per tile; else 0. Measured on Zen 3
// (AVX2, 1 thread): ResNet-18's 512->512 7x7 layer 65 -> 81 GFLOPS with the
// weights warm, unchanged on the 14x14 layers, 2-5 % slower on the 28x28 and
// 56x56 ones (small weights, which L2 holds anyway).
int64_t default_accumulator_rows(const ir::Tensor& conv, const RegisterTile& tile);

// Stage helpers shared with the templates.
ir::Tensor stage_by_tag(const ir::ComputeDAG& dag, const std::string& tag, const std::string& who);
std::vector<std::string> axis_names(const ir::Tensor& t);
std::vector<std::string> reduce_names(const ir::Tensor& t);

}  // namespace tessera::schedule
