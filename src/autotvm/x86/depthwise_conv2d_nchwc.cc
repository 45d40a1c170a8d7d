// depthwise_conv2d_NCHWc.x86: depthwise convolution in NCHW[x]c (multiplier 1).
// Each output channel block reads only its own input block, so the tile is
// a row of tile_ow pixels x one channel vector; the knobs order the kernel
// taps against the tile columns, unroll the kernel width, and choose the
// parallel granularity and where the padding is computed.
#include "autotvm/x86/schedule_util.h"
#include "autotvm/x86/x86_templates.h"

namespace tessera::autotvm::x86 {

namespace {
const char* kTag = "depthwise_conv2d_nchwc";
}

Template depthwise_conv2d_nchwc_template() {
  Template t;
  t.name = "depthwise_conv2d_NCHWc.x86";
  t.target_kind = "llvm";
  t.matches = [](const std::string& op, const ops::OpArgs& args) {
    return op == "depthwise_conv2d" && args.weight.size() == 4 && args.weight[1] == 1;
  };
  t.declare = [](const ops::OpArgs& args, const target::Target& target) {
    ops::OpArgs a = args;
    a.layout = "NCHWc";
    const int64_t bn = a.ic_bn ? a.ic_bn : a.oc_bn ? a.oc_bn : channel_block(a.weight[0], target);
    a.ic_bn = a.oc_bn = bn;
    return a;
  };
  t.define_space = [](const ops::Workload& w, const target::Target& target) {
    const ir::Tensor conv = stage_by_tag(w.dag, kTag, "depthwise_conv2d_NCHWc.x86");
    const int64_t ow = conv->shape[3];
    ConfigSpace s;
    s.define_split("tile_ow", ow, SplitPolicy::Factors, 2, 32);
    s.define_reorder("reorder_tile", 3,
                     ReorderPolicy::All);  // di, dj, ow; the channel block innermost
    s.define_knob("unroll_kw", {true, false});
    define_nchwc_common_knobs(s, w.dag);
    // Taps outside an unrolled row of up to 8 pixels (one accumulator per
    // pixel), padding read in place, as the hand-written schedule does.
    const int64_t reg_n = divisors_up_to(ow, 8).back();
    nlohmann::json fallback = {{"tile_ow", {ow / reg_n, reg_n}}};
    for (const auto& k : s.knobs())
      if (k.name == "pad") fallback["pad"] = "inline";
    s.set_fallback(fallback);
    return s;
  };
  t.apply = [](const ops::Workload& w, const target::Target&, const ConfigEntity& c) {
    const ir::Tensor conv = stage_by_tag(w.dag, kTag, "depthwise_conv2d_NCHWc.x86");
    const auto a = axis_names(conv);    // n, c_chunk, oh, ow, c_block
    const auto r = reduce_names(conv);  // di, dj
    NchwcTilePlan plan;
    plan.ow_bn = c.split("tile_ow").at(1);
    plan.tile_order = {a[0], a[1], a[2]};
    const std::vector<std::string> inner = {r[0], r[1], a[3]};
    for (int i : c.order("reorder_tile")) plan.tile_order.push_back(inner[i]);
    plan.tile_order.push_back(a[4]);
    plan.tile_unroll.push_back(a[3]);
    if (c.value("unroll_kw").get<bool>()) plan.tile_unroll.push_back(r[1]);
    read_nchwc_common_knobs(c, w.dag, plan);
    return nchwc_tile_trace(w.dag, kTag, plan);
  };
  return t;
}

}  // namespace tessera::autotvm::x86
