// conv2d_NCHWc_1x1.x86: 1x1 convolutions in NCHW[x]c. With no kernel window
// to reuse, the register tile spans rows, columns and channel blocks
// (tile_oh x tile_ow x tile_oc), and the order knob places the input-channel
// block loop among the tile loops. Unpadded ones are declared over flattened
// output positions (one row of OH*OW, see ops::nchwc_flattens_spatial): there
// tile_oh is 1 and tile_ow runs along the whole image, and the buffer knob
// offers to accumulate groups of positions in a stack buffer, the input
// channels looping outside the register tiles a few blocks per pass
// (schedule::AccumulatorBuffer).
#include <algorithm>

#include "autotvm/x86/schedule_util.h"
#include "autotvm/x86/x86_templates.h"
#include "ops/registry.h"
#include "schedule/manual_schedule.h"

namespace tessera::autotvm::x86 {

namespace {

const char* kTag = "conv2d_nchwc";

// [columns, input-channel blocks per pass] of the buffer; [0, 0]: none. Over
// flattened positions (one row): the largest divisors of the row up to 64,
// 128 and 256 positions, with 4, 8 or 16 blocks per pass (all of them when
// fewer), and the hand-written schedule's choice.
std::vector<nlohmann::json> buffer_choices(const ir::Tensor& conv, const schedule::AccumulatorBuffer& manual) {
  std::vector<nlohmann::json> choices = {nlohmann::json::array({0, 0})};
  const int64_t rows = conv->shape[2], width = conv->shape[3], blocks = conv->reduce_axes.at(0).extent;
  auto add = [&](int64_t cols, int64_t ic_blocks) {
    const nlohmann::json c = nlohmann::json::array({cols, std::min(ic_blocks, blocks)});
    if (std::find(choices.begin(), choices.end(), c) == choices.end()) choices.push_back(c);
  };
  if (manual.rows > 0) add(manual.cols, manual.ic_blocks);
  if (rows != 1) return choices;
  for (int64_t most : {64, 128, 256}) {
    int64_t cols = 1;
    for (int64_t c = std::min(width, most); c >= 1; --c)
      if (width % c == 0) {
        cols = c;
        break;
      }
    for (int64_t ic_blocks : {4, 8, 16}) add(cols, ic_blocks);
  }
  return choices;
}

}  // namespace

Template conv2d_nchwc_1x1_template() {
  Template t;
  t.name = "conv2d_NCHWc_1x1.x86";
  t.target_kind = "llvm";
  t.matches = [](const std::string& op, const ops::OpArgs& args) {
    return is_nchwc_conv(op, args) && args.weight[2] == 1 && args.weight[3] == 1;
  };
  t.declare = declare_conv2d_nchwc;
  t.define_space = [](const ops::Workload& w, const target::Target& target) {
    const ir::Tensor conv = stage_by_tag(w.dag, kTag, "conv2d_NCHWc_1x1.x86");
    const int64_t oh = conv->shape[2], ow = conv->shape[3];
    schedule::RegisterTile manual = schedule::nchwc_register_tile(
        conv->shape[1], conv->shape[4], ow, target.vector_unit(), schedule::nchwc_chunks_per_group(conv));
    const int parallel_fuse = schedule::default_parallel_fuse(conv, manual);

    ConfigSpace s;
    s.define_split("tile_oh", oh, SplitPolicy::Factors, 2, 4);
    define_tile_ow_knob(s, ow, target, manual.ow);
    define_tile_oc_knob(s, conv);
    // ic_inner merged into (oh, ow): outside both, between, or innermost.
    s.define_reorder("reorder_inner", 3, ReorderPolicy::Interleave, {{0, 1}});
    define_nchwc_common_knobs(s, w.dag);
    const schedule::AccumulatorBuffer buffer = schedule::default_accumulator_buffer(conv, manual);
    s.define_knob("buffer", buffer_choices(conv, buffer));
    s.set_fallback({{"tile_oh", {oh, 1}},
                    {"tile_ow", manual.ow},
                    {"tile_oc", manual.oc},
                    {"buffer", buffer_choices(conv, buffer).at(buffer.rows > 0 ? 1 : 0)},
                    {"parallel_fuse", parallel_fuse}});
    return s;
  };
  t.apply = [](const ops::Workload& w, const target::Target&, const ConfigEntity& c) {
    const ir::Tensor conv = stage_by_tag(w.dag, kTag, "conv2d_NCHWc_1x1.x86");
    const nlohmann::json buffer = c.value("buffer");
    if (buffer[0].get<int64_t>() > 0) {
      // Rows, columns and input-channel blocks as the buffer cuts them.
      NchwcTilePlan plan = schedule::conv_window_tile_plan(
          conv, c.value("tile_oc").get<int64_t>(), 1, c.value("tile_ow").get<int64_t>(), {0, 1, 2}, false,
          {.rows = 1, .cols = buffer[0].get<int64_t>(), .ic_blocks = buffer[1].get<int64_t>()});
      read_nchwc_common_knobs(c, w.dag, plan);
      return nchwc_tile_trace(w.dag, kTag, plan);
    }
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
