// conv2d_NCHWc_winograd.x86: 3x3 stride-1 convolutions by Winograd's F(m x m,
// 3 x 3) in NCHW[x]c (ops/winograd.h). The knobs are the batched
// product's register tile: output-channel chunks x Winograd tiles.
#include <algorithm>

#include "autotvm/x86/schedule_util.h"
#include "autotvm/x86/x86_templates.h"
#include "schedule/winograd_tile.h"

namespace tessera::autotvm::x86 {

Template conv2d_winograd_template() {
  Template t;
  t.name = "conv2d_NCHWc_winograd.x86";
  t.target_kind = "llvm";
  t.matches = [](const std::string& op, const ops::OpArgs&) { return op == "conv2d_winograd"; };
  t.declare = [](const ops::OpArgs& args, const target::Target& target) {
    ops::OpArgs a = args;
    if (!a.ic_bn && a.input.size() == 4) a.ic_bn = channel_block(a.input[1], target);
    if (!a.oc_bn && !a.weight.empty()) a.oc_bn = channel_block(a.weight[0], target);
    return a;
  };
  t.define_space = [](const ops::Workload& w, const target::Target& target) {
    const ir::Tensor product = stage_by_tag(w.dag, "winograd_bgemm", "conv2d_NCHWc_winograd.x86");
    const schedule::WinogradPlan manual = schedule::default_winograd_plan(w.dag, target.vector_unit());
    ConfigSpace s;
    define_tile_oc_knob(s, product);
    std::vector<nlohmann::json> tiles;
    for (int64_t n = 1; n <= std::min<int64_t>(product->shape[2], target.vector_registers - 2); ++n) tiles.push_back(n);
    s.define_knob("tile_t", tiles);
    s.set_fallback({{"tile_oc", manual.tile_oc}, {"tile_t", manual.tile_t}});
    return s;
  };
  t.apply = [](const ops::Workload& w, const target::Target&, const ConfigEntity& c) {
    return schedule::winograd_trace(
        w.dag, {.tile_oc = c.value("tile_oc").get<int64_t>(), .tile_t = c.value("tile_t").get<int64_t>()});
  };
  return t;
}

}  // namespace tessera::autotvm::x86
