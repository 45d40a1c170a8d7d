#pragma once
// Small helpers shared by the x86 templates: finding stages, naming their
// axes, choosing blocks for the target, and building the register-tiled
// NCHWc convolution schedule the conv templates share.
#include <string>
#include <vector>

#include "autotvm/config_space.h"
#include "codegen/target.h"
#include "ir/compute_dag.h"
#include "ops/registry.h"
#include "schedule/trace.h"

namespace tessera::autotvm::x86 {

// The DAG's stage with `tag`; throws tessera::Error naming `who` when absent.
ir::Tensor stage_by_tag(const ir::ComputeDAG& dag, const std::string& tag, const std::string& who);
std::vector<std::string> axis_names(const ir::Tensor& t);
std::vector<std::string> reduce_names(const ir::Tensor& t);
// a@b@c: the name of fused iterators.
std::string fused_name(const std::vector<std::string>& iters);

// fp32 lanes of the target's widest vector.
int64_t vector_lanes(const codegen::Target& target);
// The largest power of two up to the target's lanes that divides `channels`.
int64_t channel_block(int64_t channels, const codegen::Target& target);
// Divisors of n up to `limit`, ascending.
std::vector<int64_t> divisors_up_to(int64_t n, int64_t limit);
// The inner lengths of the first split of `stage`.`iter` in `trace` (how the
// templates read a hand-written schedule's tile sizes back as a config).
std::vector<int64_t> split_lengths(const schedule::Trace& trace, const std::string& stage, const std::string& iter);

// A register-tiled NCHWc convolution (conv2d_nchwc or depthwise_conv2d_nchwc):
// the output is cut into tiles of oc_bn channel blocks x oh_bn rows x ow_bn
// columns, each accumulated in registers (the tile stage computed at the
// output's tile loop) across the whole reduction.
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

// Shared by the NCHWc templates (defined in conv2d_nchwc.cc): the declaration
// in NCHWc with blocks of the target's vector width unless args give them, and
// the knobs for parallel granularity ("parallel_fuse") and padding ("pad",
// only when the DAG pads).
ops::OpArgs declare_conv2d_nchwc(const ops::OpArgs& args, const codegen::Target& target);
void define_nchwc_common_knobs(ConfigSpace& space, const ir::ComputeDAG& dag);
// "tile_oc": output-channel chunks per register tile (NchwcTilePlan::oc_bn),
// 1 (the hand-written schedule's, so the first candidate), 2 or 4 where they
// divide the chunks of `conv`.
void define_tile_oc_knob(ConfigSpace& space, const ir::Tensor& conv);
void read_nchwc_common_knobs(const ConfigEntity& c, const ir::ComputeDAG& dag, NchwcTilePlan& plan);

}  // namespace tessera::autotvm::x86
