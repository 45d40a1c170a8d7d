// conv2d_NCHWc_1x1.x86: 1x1 convolutions in NCHW[x]c. With no kernel window
// to reuse, the register tile spans rows, columns and channel blocks
// (tile_oh x tile_ow x tile_oc), and the order knob places the input-channel
// block loop among the tile loops. Unpadded ones are declared over flattened
// output positions (one row of OH*OW, see ops::nchwc_flattens_spatial): there
// tile_oh is 1 and tile_ow runs along the whole image.
#include "autotvm/x86/schedule_util.h"
#include "autotvm/x86/x86_templates.h"
#include "ops/registry.h"
#include "schedule/manual_schedule.h"

namespace tessera::autotvm::x86 {

namespace {
const char* kTag = "conv2d_nchwc";
}

Template conv2d_nchwc_1x1_template() {
  Template t;
  t.name = "conv2d_NCHWc_1x1.x86";
  t.target_kind = "llvm";
  t.matches = [](const std::string& op, const ops::OpArgs& args) {
    return op == "conv2d" && args.weight.size() == 4 && args.weight[2] == 1 && args.weight[3] == 1;
  };
  t.declare = declare_conv2d_nchwc;
  t.define_space = [](const ops::Workload& w, const codegen::Target& target) {
    const ir::Tensor conv = stage_by_tag(w.dag, kTag, "conv2d_NCHWc_1x1.x86");
    const int64_t oh = conv->shape[2], ow = conv->shape[3];
    const schedule::RegisterTile manual =
        schedule::nchwc_register_tile(conv->shape[1], conv->shape[4], ow, target.vector_unit());

    ConfigSpace s;
    s.define_split("tile_oh", oh, SplitPolicy::Factors, 2, 4);
    define_tile_ow_knob(s, ow, target, manual.ow);
    define_tile_oc_knob(s, conv);
    // ic_inner merged into (oh, ow): outside both, between, or innermost.
    s.define_reorder("reorder_inner", 3, ReorderPolicy::Interleave, {{0, 1}});
    define_nchwc_common_knobs(s, w.dag);
    s.set_fallback({{"tile_oh", {oh, 1}}, {"tile_ow", manual.ow}, {"tile_oc", manual.oc}});
    return s;
  };
  t.apply = [](const ops::Workload& w, const ConfigEntity& c) {
    const ir::Tensor conv = stage_by_tag(w.dag, kTag, "conv2d_NCHWc_1x1.x86");
    const auto a = axis_names(conv);    // n, oc_chunk, oh, ow, oc_block
    const auto r = reduce_names(conv);  // ic_outer, ry, rx, ic_inner
    NchwcTilePlan plan;
    plan.oh_bn = c.split("tile_oh").at(1);
    plan.ow_bn = c.value("tile_ow").get<int64_t>();
    plan.oc_bn = c.value("tile_oc").get<int64_t>();
    plan.tile_order = nchwc_outer_tile_axes(plan, a);
    plan.tile_order.insert(plan.tile_order.end(), {r[0], r[1], r[2]});
    const std::vector<std::string> inner = {r[3], a[2], a[3]};
    for (int i : c.order("reorder_inner")) {
      if (inner[i] != a[2] || plan.oh_bn > 1) plan.tile_order.push_back(inner[i]);
      // Several chunks: right inside ic_inner, wherever the order knob puts
      // it, so that each input value read there feeds every chunk.
      if (inner[i] == r[3] && plan.oc_bn > 1) plan.tile_order.push_back(a[1]);
    }
    plan.tile_order.push_back(a[4]);
    if (plan.oc_bn > 1) plan.tile_unroll.push_back(a[1]);
    if (plan.oh_bn > 1) plan.tile_unroll.push_back(a[2]);
    plan.tile_unroll.push_back(a[3]);
    read_nchwc_common_knobs(c, w.dag, plan);
    return nchwc_tile_trace(w.dag, kTag, plan);
  };
  return t;
}

}  // namespace tessera::autotvm::x86
