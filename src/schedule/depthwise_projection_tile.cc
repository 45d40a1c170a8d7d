#include "schedule/depthwise_projection_tile.h"

#include <algorithm>

#include "schedule/nchwc_tile.h"
#include "tessera/error.h"

namespace tessera::schedule {
namespace {

constexpr const char* kWho = "depthwise + projection schedule";

// The largest divisor of n that is at most `most`.
int64_t divisor_at_most(int64_t n, int64_t most) {
  for (int64_t d = std::min(n, most); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

// The compute stages strictly between `from` and `to` along the chain of
// single readers, in order.
std::vector<ir::Tensor> chain_between(const ir::ComputeDAG& dag, const ir::Tensor& from, const ir::Tensor& to) {
  std::vector<ir::Tensor> chain;
  ir::Tensor at = from;
  while (at != to) {
    auto readers = dag.consumers(at);
    if (readers.size() != 1) throw Error(std::string(kWho) + ": '" + at->name + "' must have exactly one reader");
    at = readers[0];
    if (at != to) chain.push_back(at);
  }
  return chain;
}

}  // namespace

DepthwiseProjectionPlan default_depthwise_projection_plan(const ir::ComputeDAG& dag) {
  const int64_t rows = stage_by_tag(dag, "depthwise_conv2d_nchwc", kWho)->shape[2];
  DepthwiseProjectionPlan plan;
  plan.rows = divisor_at_most(rows, 4);
  return plan;
}

Trace depthwise_projection_trace(const ir::ComputeDAG& dag, const DepthwiseProjectionPlan& plan) {
  const ir::Tensor dw = stage_by_tag(dag, "depthwise_conv2d_nchwc", kWho);
  const ir::Tensor conv = stage_by_tag(dag, "conv2d_nchwc", kWho);
  const ir::Tensor out = dag.outputs().at(0);
  if (conv->shape[2] != 1 || conv->reduce_axes.size() != 4 || conv->reduce_axes[1].extent != 1)
    throw Error(std::string(kWho) + ": '" + conv->name + "' is not a 1x1 convolution over flattened positions");
  const int64_t width = dw->shape[3], rows = dw->shape[2];
  if (rows % plan.rows != 0) throw Error(std::string(kWho) + ": rows per tile must divide " + std::to_string(rows));
  const std::vector<ir::Tensor> middle = chain_between(dag, dw, conv);  // the depthwise's epilogue
  const std::vector<ir::Tensor> after = chain_between(dag, conv, out);  // the projection's
  if (middle.empty()) throw Error(std::string(kWho) + ": the depthwise convolution needs an epilogue (bias) to buffer");
  const ir::Tensor buffered = middle.back();

  const auto o = axis_names(out);  // n, chunk, 1, position, block
  const int64_t tile_ow = divisor_at_most(plan.rows * width, plan.tile_ow);
  Trace t;
  for (const auto& s : after) t.compute_inline(s->name);
  t.split(out->name, o[3], {plan.rows * width}).split(out->name, split_part(o[3], 1), {tile_ow});
  const std::string tile = split_part(o[3], 0), cols = split_part(split_part(o[3], 1), 0),
                    col = split_part(split_part(o[3], 1), 1);
  t.reorder(out->name, {o[0], tile, o[1], o[2], cols, col, o[4]});
  const std::string parallel = o[0] + "@" + tile;
  t.fuse(out->name, {o[0], tile}).parallel(out->name, parallel).unroll(out->name, col).vectorize(out->name, o[4]);

  const auto c = axis_names(conv);
  const auto cr = reduce_names(conv);
  t.compute_at(conv->name, out->name, cols);
  t.reorder(conv->name, {c[0], c[1], c[2], cr[0], cr[1], cr[2], cr[3], c[3], c[4]});
  t.unroll(conv->name, c[3]).vectorize(conv->name, c[4]);

  // The depthwise output of the tile's rows, every channel, once per tile.
  const auto b = axis_names(buffered);
  t.compute_at(buffered->name, out->name, parallel);
  for (size_t i = 0; i + 1 < middle.size(); ++i) t.compute_inline(middle[i]->name);
  const int64_t dw_ow = divisor_at_most(width, plan.depthwise_ow);
  t.split(buffered->name, b[3], {dw_ow}).unroll(buffered->name, split_part(b[3], 1)).vectorize(buffered->name, b[4]);
  t.compute_at(dw->name, buffered->name, split_part(b[3], 0));
  for (const auto& in : dw->inputs())
    if (!in->is_placeholder()) t.compute_inline(in->name);  // the padding, read through a bounds check
  const auto d = axis_names(dw);
  const auto dr = reduce_names(dw);
  t.reorder(dw->name, {d[0], d[1], d[2], dr[0], dr[1], d[3], d[4]});
  t.unroll(dw->name, d[3]).unroll(dw->name, dr[1]).vectorize(dw->name, d[4]);
  return t;
}

}  // namespace tessera::schedule
