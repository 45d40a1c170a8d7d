// qlinear_conv2d_NCHWc.x86: the int8 convolutions in their blocked layouts
// (ops/qlinear_conv2d.h), every kernel size: conv2d_NCHWc's knobs over the
// stage tagged qlinear_conv2d_nchwc (register tiles, the kernel width
// unrolled, the reduction's order, an accumulator buffer), the byte axis
// always a dot product just outside the channel block. The hand-written
// int8 schedule is the fallback.
#include "autotvm/x86/schedule_util.h"
#include "autotvm/x86/x86_templates.h"
#include "schedule/manual_schedule.h"

namespace tessera::autotvm::x86 {

namespace {

const char* kTag = "qlinear_conv2d_nchwc";

}  // namespace

Template qlinear_conv2d_nchwc_template() {
  Template t;
  t.name = "qlinear_conv2d_NCHWc.x86";
  t.target_kind = "llvm";
  t.matches = [](const std::string& op, const ops::OpArgs& args) {
    return op == "qlinear_conv2d" && args.layout == "NCHWc" && args.weight.size() == 4;
  };
  t.declare = [](const ops::OpArgs& args, const target::Target&) { return args; };  // blocked as the graph has it
  t.define_space = [](const ops::Workload& w, const target::Target& target) {
    const ir::Tensor conv = stage_by_tag(w.dag, kTag, "qlinear_conv2d_NCHWc.x86");
    return nchwc_window_space(w, target, kTag, schedule::int8_register_tile(conv, target.vector_unit()));
  };
  t.apply = [](const ops::Workload& w, const target::Target&, const ConfigEntity& c) {
    return nchwc_window_apply(w, c, kTag);
  };
  return t;
}

}  // namespace tessera::autotvm::x86
