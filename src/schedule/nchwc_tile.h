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
// channel block innermost.
NchwcTilePlan conv_window_tile_plan(const ir::Tensor& conv, int64_t oc_bn, int64_t oh_bn, int64_t ow_bn,
                                    const std::vector<int>& reduce_order = {0, 1, 2}, bool unroll_kw = false);

// Stage helpers shared with the templates.
ir::Tensor stage_by_tag(const ir::ComputeDAG& dag, const std::string& tag, const std::string& who);
std::vector<std::string> axis_names(const ir::Tensor& t);
std::vector<std::string> reduce_names(const ir::Tensor& t);

}  // namespace tessera::schedule
