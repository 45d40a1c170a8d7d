#include "schedule/batch_matmul_tile.h"

#include <algorithm>
#include <vector>

#include "schedule/iter_names.h"
#include "schedule/nchwc_tile.h"

namespace tessera::schedule {
namespace {

int64_t largest_divisor_up_to(int64_t n, int64_t cap) {
  for (int64_t d = std::min(n, cap); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

}  // namespace

BatchMatmulPlan batch_matmul_default_plan(int64_t m, int64_t n, const VectorUnit& unit) {
  const int64_t lanes = unit.lanes();
  BatchMatmulPlan plan;
  // A divisor when one is near; else the full tile, its last one partial
  // (ViT's 197 tokens are prime).
  plan.ty = largest_divisor_up_to(m, 4);
  if (plan.ty < std::min<int64_t>(m, 4) / 2 + 1) plan.ty = std::min<int64_t>(m, 4);
  plan.tx = largest_divisor_up_to(n, 2 * lanes);
  if (plan.tx < std::min(n, lanes)) plan.tx = std::min(n, 2 * lanes);
  return plan;
}

Trace batch_matmul_tile_trace(const ir::ComputeDAG& dag, const BatchMatmulPlan& plan, const std::string& tag) {
  const ir::Tensor mm = stage_by_tag(dag, tag, "batch_matmul_tile_trace");
  const ir::Tensor transposed = stage_by_tag(dag, "batch_matmul_transpose_b", "batch_matmul_tile_trace");
  const ir::Tensor out = dag.outputs().at(0);
  const int64_t ty = plan.ty, tx = plan.tx, tk = plan.tk;

  Trace t;
  for (const auto& s : dag.tensors()) {
    if (s->is_placeholder() || s == mm || s == out || s == transposed) continue;
    if (s->is_reduction()) {
      t.parallel(s->name, axis_names(s)[0]);  // an int8 product's row or column sums: once, per batch
      continue;
    }
    t.compute_inline(s->name);
  }
  t.parallel(transposed->name, axis_names(transposed)[0]);
  std::string acc = mm->name;
  if (plan.cache_write && mm == out) {
    t.cache_write(mm->name);
    acc = cache_write_name(mm->name);
  }
  const auto o = axis_names(out);  // b, i, j
  t.split(out->name, o[1], {ty});
  t.split(out->name, o[2], {tx});
  const std::string i0 = split_part(o[1], 0), i1 = split_part(o[1], 1), j0 = split_part(o[2], 0),
                    j1 = split_part(o[2], 1);
  const auto a = axis_names(mm);
  // An int8 product by the byte dot product (ops/qlinear_batch_matmul.h)
  // reduces over k_outer and the 4 bytes of a lane, k_4: innermost but for
  // the vector of columns, annotated dot_product.
  const std::vector<std::string> reduces = reduce_names(mm);
  const std::string k = reduces[0];
  const std::string bytes = reduces.size() == 2 ? reduces[1] : "";
  std::vector<std::string> reduce = {k};
  std::vector<std::string> order = {o[0], i0, j0};
  if (acc == out->name) {  // no cache: the output accumulates in memory, K inside the tile loops
    if (tk > 1) {
      t.split(out->name, k, {tk});
      reduce = {split_part(k, 0), split_part(k, 1)};
    }
    order.insert(order.end(), reduce.begin(), reduce.end());
  }
  order.insert(order.end(), {i1, j1});
  t.reorder(out->name, order);
  if (plan.parallel == "batch_rows") {
    t.fuse(out->name, {o[0], i0});
    t.parallel(out->name, fused_name({o[0], i0}));
  } else {
    t.parallel(out->name, o[0]);
  }
  t.unroll(out->name, i1);
  t.vectorize(out->name, j1);
  if (acc == out->name) {
    if (tk > 1 && plan.unroll_k) t.unroll(out->name, split_part(k, 1));
    return t;
  }
  t.compute_at(acc, out->name, j0);
  if (tk > 1) {
    t.split(acc, k, {tk});
    reduce = {split_part(k, 0), split_part(k, 1)};
  }
  std::vector<std::string> acc_order = {a[0]};
  acc_order.insert(acc_order.end(), reduce.begin(), reduce.end());
  acc_order.push_back(a[1]);
  if (!bytes.empty()) acc_order.push_back(bytes);
  acc_order.push_back(a[2]);
  t.reorder(acc, acc_order);
  t.unroll(acc, a[1]);
  if (tk > 1 && plan.unroll_k) t.unroll(acc, split_part(k, 1));
  if (!bytes.empty()) t.annotate(acc, bytes, Annotation::DotProduct);
  t.vectorize(acc, a[2]);
  return t;
}

}  // namespace tessera::schedule
