// dense_pack.x86: dense with the weight packed in blocks of bn outputs
// (ops::dense_pack). A tile of tile_y rows x tile_x weight blocks is
// accumulated in registers across K; K can be split, its inner part unrolled.
#include "autotvm/x86/schedule_util.h"
#include "autotvm/x86/x86_templates.h"
#include "ops/dense.h"
#include "schedule/manual_schedule.h"

namespace tessera::autotvm::x86 {

namespace {

const char* kTag = "dense_pack";

schedule::Trace dense_pack_trace(const ops::Workload& w, const ConfigEntity& c) {
  const ir::Tensor dense = stage_by_tag(w.dag, kTag, "dense_pack.x86");
  const ir::Tensor out = w.dag.outputs().at(0);
  const int64_t bn = std::stoll(dense->attrs.at("bn"));
  const int64_t ty = c.split("tile_y").at(1), tx = c.split("tile_x").at(1), tk = c.split("tile_k").at(1);
  const std::string parallel = c.value("parallel").get<std::string>();

  schedule::Trace t;
  for (const auto& s : w.dag.tensors())
    if (!s->is_placeholder() && s != dense && s != out) t.compute_inline(s->name);
  std::string acc = dense->name;
  if (dense == out) {
    t.cache_write(dense->name);
    acc = cache_write_name(dense->name);
  }
  const auto o = axis_names(out);  // i, j
  std::string i_outer = o[0];
  if (ty > 1) {
    t.split(out->name, o[0], {ty});
    i_outer = split_part(o[0], 0);
  }
  t.split(out->name, o[1], {tx, bn});  // j.0: tiles, j.1: blocks in a tile, j.2: lanes of a block
  const std::string j0 = split_part(o[1], 0), j1 = split_part(o[1], 1), j2 = split_part(o[1], 2);
  std::vector<std::string> order = {i_outer, j0};
  if (parallel == "cols") std::swap(order[0], order[1]);
  if (ty > 1) order.push_back(split_part(o[0], 1));
  order.insert(order.end(), {j1, j2});
  if (ty > 1 || parallel == "cols") t.reorder(out->name, order);
  std::string attach = order[1];
  if (parallel == "fused") {
    t.fuse(out->name, {order[0], order[1]});
    attach = fused_name({order[0], order[1]});
    t.parallel(out->name, attach);
  } else {
    t.parallel(out->name, order[0]);
  }
  t.vectorize(out->name, j2);
  t.compute_at(acc, out->name, attach);

  const auto d = axis_names(dense);
  const std::string k = reduce_names(dense)[0];
  t.split(acc, d[1], {bn});
  std::vector<std::string> reduce = {k};
  if (tk > 1) {
    t.split(acc, k, {tk});
    reduce = {split_part(k, 0), split_part(k, 1)};
  }
  // One row: i stays outside K (extent 1), as in the hand-written schedule.
  std::vector<std::string> acc_order;
  if (ty == 1) acc_order.push_back(d[0]);
  acc_order.insert(acc_order.end(), reduce.begin(), reduce.end());
  if (ty > 1) acc_order.push_back(d[0]);
  acc_order.insert(acc_order.end(), {split_part(d[1], 0), split_part(d[1], 1)});
  t.reorder(acc, acc_order);
  t.unroll(acc, split_part(d[1], 0));
  if (ty > 1) t.unroll(acc, d[0]);
  if (tk > 1 && c.value("unroll_k").get<bool>()) t.unroll(acc, split_part(k, 1));
  t.vectorize(acc, split_part(d[1], 1));
  return t;
}

}  // namespace

Template dense_pack_template() {
  Template t;
  t.name = "dense_pack.x86";
  t.target_kind = "llvm";
  t.matches = [](const std::string& op, const ops::OpArgs&) { return op == "dense"; };
  t.declare = [](const ops::OpArgs& args, const codegen::Target&) {
    ops::OpArgs a = args;
    a.layout = "packed";  // the block: args.oc_bn, else ops::dense_pack_block(N)
    return a;
  };
  t.define_space = [](const ops::Workload& w, const codegen::Target& target) {
    const ir::Tensor dense = stage_by_tag(w.dag, kTag, "dense_pack.x86");
    const int64_t m = dense->shape[0], k = dense->reduce_axes[0].extent;
    const int64_t bn = std::stoll(dense->attrs.at("bn")), blocks = dense->shape[1] / bn;
    const int64_t manual_tile = schedule::dense_pack_tile(blocks, bn, target.vector_unit());

    ConfigSpace s;
    s.define_split("tile_y", m, SplitPolicy::Factors, 2, 8);
    s.define_split("tile_x", blocks, SplitPolicy::Factors, 2, std::max<int64_t>(16, manual_tile));
    s.define_split("tile_k", k, SplitPolicy::Factors, 2, 16);
    s.define_knob("unroll_k", {false, true});
    s.define_knob("parallel", {"fused", "rows", "cols"});
    s.set_fallback({{"tile_y", {m, 1}}, {"tile_x", {blocks / manual_tile, manual_tile}}, {"tile_k", {k, 1}}});
    return s;
  };
  t.apply = dense_pack_trace;
  return t;
}

}  // namespace tessera::autotvm::x86
