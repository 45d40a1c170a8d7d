// conv2d_NCHWc.x86: convolutions with kernels larger than 1x1, declared in
// NCHW[x]c with channel blocks of one vector. Knobs after TVM's x86 NCHWc
// schedule: the register tile (tile_ow columns x tile_oh rows x tile_oc
// channel blocks), unrolling the kernel width, the order of the outer
// reduction loops, the parallel granularity and where the padding is computed.
#include <algorithm>

#include "autotvm/x86/schedule_util.h"
#include "autotvm/x86/x86_templates.h"
#include "ops/registry.h"
#include "schedule/manual_schedule.h"

namespace tessera::autotvm::x86 {

namespace {

const char* kTag = "conv2d_nchwc";

}  // namespace

bool is_nchwc_conv(const std::string& op, const ops::OpArgs& args) {
  return (op == "conv2d" || op == "group_conv2d") && args.weight.size() == 4;
}

ops::OpArgs declare_conv2d_nchwc(const ops::OpArgs& args, const target::Target& target) {
  ops::OpArgs a = args;
  a.layout = "NCHWc";
  // Grouped, the blocks divide one group's channels.
  const int64_t groups = std::max<int64_t>(a.groups, 1);
  if (!a.ic_bn && a.input.size() == 4) a.ic_bn = channel_block(a.input[1] / groups, target);
  if (!a.oc_bn) a.oc_bn = channel_block(a.weight[0] / groups, target);
  return a;
}

void define_nchwc_common_knobs(ConfigSpace& space, const ir::ComputeDAG& dag) {
  space.define_knob("parallel_fuse", {3, 2, 4});
  for (const auto& t : dag.tensors())
    if (t->tag == "pad") space.define_knob("pad", {"root", "inline", "tile"});
}

void define_tile_ow_knob(ConfigSpace& space, int64_t width, const target::Target& target, int64_t manual) {
  // Divisors of the row up to 32; without broadcast operands also every width
  // whose one-block tile fits the registers (accumulators, a weight and a
  // broadcast), since the tiles that reuse broadcasts (4 blocks x 3 columns)
  // rarely divide rows of 7 * 2^k: the partitioned tail pays for that.
  std::vector<int64_t> widths = divisors_up_to(width, 32);
  if (!target.vector_unit().broadcast_operand())
    for (int64_t w = 1; w <= std::min<int64_t>(width, target.vector_registers - 2); ++w) widths.push_back(w);
  widths.push_back(std::min(manual, width));
  std::sort(widths.begin(), widths.end());
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
  std::vector<nlohmann::json> values(widths.begin(), widths.end());
  space.define_knob("tile_ow", values);
}

void define_tile_oc_knob(ConfigSpace& space, const ir::Tensor& conv, int64_t manual) {
  // Each count up to 4 that divides the chunks (3 for RegNet's 9, 21 and 51),
  // a group's when grouped (a tile across groups shares no input): beyond 4
  // even a one-column tile leaves too few registers for the weights. Which
  // tiles spill is left to the tuner.
  const int64_t group_chunks = schedule::nchwc_chunks_per_group(conv);
  std::vector<nlohmann::json> chunks;
  for (int64_t b : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}})
    if (group_chunks % b == 0 || b == manual) chunks.push_back(b);
  if (manual > 4) chunks.push_back(manual);
  space.define_knob("tile_oc", chunks);
}

void read_nchwc_common_knobs(const ConfigEntity& c, const ir::ComputeDAG& dag, NchwcTilePlan& plan) {
  plan.parallel_fuse = c.value("parallel_fuse").get<int>();
  for (const auto& t : dag.tensors())
    if (t->tag == "pad") plan.pad = c.value("pad").get<std::string>();
}

ConfigSpace nchwc_window_space(const ops::Workload& w, const target::Target& target, const char* tag,
                               schedule::RegisterTile manual) {
  const ir::Tensor conv = stage_by_tag(w.dag, tag, tag);
  const int64_t oh = conv->shape[2], ow = conv->shape[3];
  // (A row that divides by a narrower tile gets it: manual.ow may change.)
  const int parallel_fuse = schedule::default_parallel_fuse(conv, manual);
  ConfigSpace s;
  define_tile_ow_knob(s, ow, target, manual.ow);
  std::vector<nlohmann::json> rows;
  for (int64_t r : divisors_up_to(oh, 2)) rows.push_back(r);
  s.define_knob("tile_oh", rows);
  define_tile_oc_knob(s, conv, manual.oc);
  s.define_knob("unroll_kw", {false, true});
  s.define_reorder("reorder_reduce", 3,
                   ReorderPolicy::All);  // ic_outer, ry, rx; the channel block's loops stay innermost
  define_nchwc_common_knobs(s, w.dag);
  std::vector<nlohmann::json> acc_rows = {0};
  for (int64_t r : schedule::accumulator_row_choices(oh, ow)) acc_rows.push_back(r);
  s.define_knob("acc_rows", acc_rows);
  // The hand-written schedule is the fallback, so its tile must be a candidate.
  s.set_fallback({{"tile_ow", manual.ow},
                  {"tile_oc", manual.oc},
                  {"acc_rows", schedule::default_accumulator_buffer(conv, manual).rows},
                  {"parallel_fuse", parallel_fuse}});
  return s;
}

schedule::Trace nchwc_window_apply(const ops::Workload& w, const ConfigEntity& c, const char* tag) {
  const ir::Tensor conv = stage_by_tag(w.dag, tag, tag);
  NchwcTilePlan plan = schedule::conv_window_tile_plan(
      conv, c.value("tile_oc").get<int64_t>(), c.value("tile_oh").get<int64_t>(), c.value("tile_ow").get<int64_t>(),
      c.order("reorder_reduce"), c.value("unroll_kw").get<bool>(), {.rows = c.value("acc_rows").get<int64_t>()});
  read_nchwc_common_knobs(c, w.dag, plan);
  return nchwc_tile_trace(w.dag, tag, plan);
}

Template conv2d_nchwc_template() {
  Template t;
  t.name = "conv2d_NCHWc.x86";
  t.target_kind = "llvm";
  t.matches = [](const std::string& op, const ops::OpArgs& args) {
    return is_nchwc_conv(op, args) && (args.weight[2] != 1 || args.weight[3] != 1);
  };
  t.declare = declare_conv2d_nchwc;
  t.define_space = [](const ops::Workload& w, const target::Target& target) {
    const ir::Tensor conv = stage_by_tag(w.dag, kTag, "conv2d_NCHWc.x86");
    return nchwc_window_space(
        w, target, kTag,
        schedule::nchwc_register_tile(conv->shape[1], conv->shape[4], conv->shape[3], target.vector_unit(),
                                      schedule::nchwc_chunks_per_group(conv)));
  };
  t.apply = [](const ops::Workload& w, const target::Target&, const ConfigEntity& c) {
    return nchwc_window_apply(w, c, kTag);
  };
  return t;
}

}  // namespace tessera::autotvm::x86
