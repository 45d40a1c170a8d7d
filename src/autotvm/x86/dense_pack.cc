// dense_pack.x86: dense with the weight packed in blocks of bn outputs
// (ops::dense_pack). A tile of tile_y rows x tile_x weight blocks is
// accumulated in registers across K, or tile_y rows x tile_lanes columns of
// one block; K can be split, its inner part unrolled.
#include "autotvm/x86/schedule_util.h"
#include "autotvm/x86/x86_templates.h"
#include "ops/dense.h"
#include "schedule/dense_pack_tile.h"

namespace tessera::autotvm::x86 {

namespace {

const char* kTag = "dense_pack";

schedule::Trace dense_pack_trace(const ops::Workload& w, const ConfigEntity& c) {
  return schedule::dense_pack_tile_trace(w.dag, {.ty = c.split("tile_y").at(1),
                                                 .tx = c.split("tile_x").at(1),
                                                 .tk = c.split("tile_k").at(1),
                                                 .lanes = c.value("tile_lanes").get<int64_t>(),
                                                 .unroll_k = c.value("unroll_k").get<bool>(),
                                                 .parallel = c.value("parallel").get<std::string>()});
}

}  // namespace

Template dense_pack_template() {
  Template t;
  t.name = "dense_pack.x86";
  t.target_kind = "llvm";
  t.matches = [](const std::string& op, const ops::OpArgs&) { return op == "dense"; };
  t.declare = [](const ops::OpArgs& args, const target::Target&) {
    ops::OpArgs a = args;
    a.layout = "packed";  // the block: args.oc_bn, else ops::dense_pack_block(N)
    return a;
  };
  t.define_space = [](const ops::Workload& w, const target::Target& target) {
    const ir::Tensor dense = stage_by_tag(w.dag, kTag, "dense_pack.x86");
    const int64_t m = dense->shape[0], k = dense->reduce_axes[0].extent;
    const int64_t bn = std::stoll(dense->attrs.at("bn")), blocks = dense->shape[1] / bn;
    const int64_t manual_tile = schedule::dense_pack_tile(blocks, bn, target.vector_unit());

    ConfigSpace s;
    // Row tiles of any height up to 8 (a last partial tile guarded): 6 rows
    // of 4 vectors fill AVX-512's registers where no divisor of M does.
    s.define_split("tile_y", m, SplitPolicy::Every, 2, 8);
    s.define_split("tile_x", blocks, SplitPolicy::Factors, 2, std::max<int64_t>(16, manual_tile));
    s.define_split("tile_k", k, SplitPolicy::Factors, 2, 16);
    s.define_knob("unroll_k", {false, true});
    s.define_knob("parallel", {"fused", "rows", "cols"});
    // Columns of a block per tile: the whole block (records from before the
    // knob), then halves of it down to one vector.
    std::vector<nlohmann::json> lanes = {bn};
    for (int64_t part : schedule::dense_pack_block_parts(bn, target.vector_unit())) lanes.push_back(part);
    s.define_knob("tile_lanes", lanes, /*added_later=*/true);
    // The hand-written plan.
    const schedule::DensePackPlan plan = schedule::dense_pack_default_plan(m, k, blocks, bn, target.vector_unit());
    s.set_fallback({{"tile_y", {(m + plan.ty - 1) / plan.ty, plan.ty}},
                    {"tile_x", {blocks / plan.tx, plan.tx}},
                    {"tile_k", {k / plan.tk, plan.tk}},
                    {"unroll_k", plan.unroll_k},
                    {"parallel", plan.parallel},
                    {"tile_lanes", plan.lanes > 0 ? plan.lanes : bn}});
    return s;
  };
  t.apply = [](const ops::Workload& w, const target::Target&, const ConfigEntity& c) {
    return dense_pack_trace(w, c);
  };
  return t;
}

}  // namespace tessera::autotvm::x86
