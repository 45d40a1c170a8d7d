#pragma once
// Small helpers shared by the x86 templates: choosing blocks and tiles for
// the target, and the knobs the NCHWc templates share.
#include <string>
#include <vector>

#include "autotvm/config_space.h"
#include "target/target.h"
#include "ir/compute_dag.h"
#include "ops/registry.h"
#include "schedule/nchwc_tile.h"
#include "schedule/trace.h"

namespace tessera::autotvm::x86 {

// The stage and tile helpers live with the NCHWc schedule they serve.
using schedule::axis_names;
using schedule::cache_write_name;
using schedule::fused_name;
using schedule::nchwc_outer_tile_axes;
using schedule::nchwc_tile_trace;
using schedule::NchwcTilePlan;
using schedule::reduce_names;
using schedule::split_part;
using schedule::stage_by_tag;

// The largest power of two up to the target's lanes that divides `channels`.
int64_t channel_block(int64_t channels, const target::Target& target);
// Divisors of n up to `limit`, ascending.
std::vector<int64_t> divisors_up_to(int64_t n, int64_t limit);

// Shared by the NCHWc templates (defined in conv2d_nchwc.cc): the declaration
// in NCHWc with blocks of the target's vector width unless args give them, and
// the knobs for parallel granularity ("parallel_fuse") and padding ("pad",
// only when the DAG pads).
ops::OpArgs declare_conv2d_nchwc(const ops::OpArgs& args, const target::Target& target);
// conv2d or group_conv2d (the same NCHWc kernels; a grouped one's output
// chunks read their group's input chunks), with an OIHW weight.
bool is_nchwc_conv(const std::string& op, const ops::OpArgs& args);
void define_nchwc_common_knobs(ConfigSpace& space, const ir::ComputeDAG& dag);
// "tile_ow": output columns per register tile (see the definition for which).
// `manual`: the hand-written schedule's width, always among them.
void define_tile_ow_knob(ConfigSpace& space, int64_t width, const target::Target& target, int64_t manual);
// "tile_oc": output-channel chunks per register tile (NchwcTilePlan::oc_bn),
// 1, 2 or 4 where they divide the chunks of `conv`, and `manual` (the
// hand-written schedule's) always.
void define_tile_oc_knob(ConfigSpace& space, const ir::Tensor& conv, int64_t manual = 1);
void read_nchwc_common_knobs(const ConfigEntity& c, const ir::ComputeDAG& dag, NchwcTilePlan& plan);

// The space and the schedule of a convolution's register tiles over its
// window (conv2d_NCHWc.x86, and the int8 one over the stage tagged
// qlinear_conv2d_nchwc, whose byte axis conv_window_tile_plan places):
// columns, rows and output chunks per tile, the kernel width unrolled, the
// order of the outer reduction loops, an accumulator buffer; `manual` (the
// hand-written schedule's tile) the fallback.
ConfigSpace nchwc_window_space(const ops::Workload& w, const target::Target& target, const char* tag,
                               schedule::RegisterTile manual);
schedule::Trace nchwc_window_apply(const ops::Workload& w, const ConfigEntity& c, const char* tag);

}  // namespace tessera::autotvm::x86
