#include "schedule/manual_schedule.h"

#include "schedule/default_schedule.h"
#include "tessera/error.h"

namespace tessera::schedule {

namespace {

ir::Tensor find_by_tag(const ir::ComputeDAG& dag, const std::string& tag) {
  for (const auto& t : dag.tensors())
    if (t->tag == tag) return t;
  return nullptr;
}

std::vector<std::string> axis_names(const ir::Tensor& t) {
  std::vector<std::string> names;
  for (const auto& a : t->axes) names.push_back(a.var.name());
  return names;
}

// Largest divisor of `n` that is at most `limit`.
int64_t largest_divisor(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

}  // namespace

Trace conv2d_nchwc_schedule(const ir::ComputeDAG& dag, int vector_bits, int64_t reg_n) {
  ir::Tensor conv = find_by_tag(dag, "conv2d_nchwc");
  if (!conv) throw Error("conv2d_nchwc_schedule: the DAG has no conv2d_nchwc stage");
  const ir::Tensor out = dag.outputs().at(0);
  const int64_t ow_extent = conv->shape[3], oc_bn = conv->shape[4];
  if (reg_n <= 0) {
    // Most vector registers hold accumulators; a few hold weights and a
    // broadcast input. Measured on AVX-512 (64->64 3x3, 56x56): 14 rows of one
    // zmm beat 7, 8 and 28.
    const int64_t lanes = vector_bits / 32;
    const int64_t budget = vector_bits >= 512 ? 24 : 14;
    const int64_t vectors_per_row = std::max<int64_t>(1, (oc_bn + lanes - 1) / lanes);
    reg_n = largest_divisor(ow_extent, std::max<int64_t>(1, budget / vectors_per_row));
  }

  Trace t;
  // Padding is computed once up front; other elementwise stages fold into their consumer.
  for (const auto& s : dag.tensors()) {
    if (s->is_placeholder() || s == conv || s == out) continue;
    if (s->tag == "pad") {
      auto a = axis_names(s);
      t.fuse(s->name, {a[0], a[1], a[2]});
      t.parallel(s->name, a[0] + "@" + a[1] + "@" + a[2]);
    } else {
      t.compute_inline(s->name);
    }
  }

  // The accumulator tile: either the conv's own cache, or the conv itself when
  // an epilogue (bias, relu) follows and becomes the stage that writes memory.
  std::string tile = conv->name;
  if (conv == out) {
    t.cache_write(conv->name);
    tile = conv->name + ".local";
  }
  auto o = axis_names(out);  // n, oc_chunk, oh, ow, oc_block
  t.split(out->name, o[3], {reg_n});
  t.fuse(out->name, {o[0], o[1], o[2]});
  const std::string outer = o[0] + "@" + o[1] + "@" + o[2];
  t.parallel(out->name, outer);
  t.vectorize(out->name, o[4]);
  t.compute_at(tile, out->name, o[3] + ".0");

  auto c = axis_names(conv);
  std::vector<std::string> r;
  for (const auto& a : conv->reduce_axes) r.push_back(a.var.name());  // ic_outer, ry, rx, ic_inner
  t.reorder(tile, {c[0], c[1], c[2], r[0], r[1], r[2], r[3], c[3], c[4]});
  t.unroll(tile, c[3]);
  t.vectorize(tile, c[4]);
  return t;
}

Trace dense_pack_schedule(const ir::ComputeDAG& dag, int vector_bits) {
  ir::Tensor dense = find_by_tag(dag, "dense_pack");
  if (!dense) throw Error("dense_pack_schedule: the DAG has no dense_pack stage");
  const ir::Tensor out = dag.outputs().at(0);
  const int64_t bn = std::stoll(dense->attrs.at("bn"));
  const int64_t blocks = dense->shape[1] / bn;
  // About 12 vector accumulators: enough independent FMA chains to hide latency.
  const int64_t lanes = vector_bits / 32;
  const int64_t vectors_per_block = (bn + lanes - 1) / lanes;
  const int64_t tile = largest_divisor(blocks, std::max<int64_t>(1, 12 / vectors_per_block));

  Trace t;
  for (const auto& s : dag.tensors())
    if (!s->is_placeholder() && s != dense && s != out) t.compute_inline(s->name);
  std::string acc = dense->name;
  if (dense == out) {
    t.cache_write(dense->name);
    acc = dense->name + ".local";
  }
  auto o = axis_names(out);  // i, j
  t.split(out->name, o[1], {tile, bn});
  t.fuse(out->name, {o[0], o[1] + ".0"});
  t.parallel(out->name, o[0] + "@" + o[1] + ".0");
  t.vectorize(out->name, o[1] + ".2");
  t.compute_at(acc, out->name, o[0] + "@" + o[1] + ".0");
  auto d = axis_names(dense);
  const std::string k = dense->reduce_axes[0].var.name();
  t.split(acc, d[1], {bn});
  t.reorder(acc, {d[0], k, d[1] + ".0", d[1] + ".1"});
  t.unroll(acc, d[1] + ".0");
  t.vectorize(acc, d[1] + ".1");
  return t;
}

Trace best_manual_schedule(const ir::ComputeDAG& dag, int vector_bits) {
  if (find_by_tag(dag, "conv2d_nchwc")) return conv2d_nchwc_schedule(dag, vector_bits);
  if (find_by_tag(dag, "dense_pack")) return dense_pack_schedule(dag, vector_bits);
  return default_schedule(dag);
}

}  // namespace tessera::schedule
