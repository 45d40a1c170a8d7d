#include "ops/dense.h"

#include "tessera/error.h"

namespace tessera::ops {

Shape dense_output_shape(const Shape& data, const Shape& weight) {
  check_rank("dense", "data (M, K)", data, 2);
  check_rank("dense", "weight (N, K)", weight, 2);
  check_dims_positive("dense", "data", data);
  check_dims_positive("dense", "weight", weight);
  if (data[1] != weight[1])
    fail("dense", "reduction length K differs: data " + shape_to_string(data) + " has K=" + std::to_string(data[1]) +
                      ", weight " + shape_to_string(weight) + " has K=" + std::to_string(weight[1]));
  return {data[0], weight[0]};
}

Shape batch_matmul_output_shape(const Shape& a, const Shape& b) {
  check_rank("batch_matmul", "a (B, M, K)", a, 3);
  check_rank("batch_matmul", "b (B, N, K)", b, 3);
  check_dims_positive("batch_matmul", "a", a);
  check_dims_positive("batch_matmul", "b", b);
  if (a[0] != b[0])
    fail("batch_matmul", "batch sizes differ: a has B=" + std::to_string(a[0]) + ", b has B=" + std::to_string(b[0]));
  if (a[2] != b[2])
    fail("batch_matmul", "reduction length K differs: a has K=" + std::to_string(a[2]) + ", b has K=" +
                             std::to_string(b[2]));
  return {a[0], a[1], b[1]};
}

ir::Tensor dense(const ir::Tensor& data, const ir::Tensor& weight) {
  Shape out = dense_output_shape(data->shape, weight->shape);
  ir::IterVar k = ir::reduce_axis(data->shape[1], "k");
  auto body = [&](const std::vector<ir::Var>& v) {
    return ir::sum(ir::load(data, {v[0], k.var}) * ir::load(weight, {v[1], k.var}), {k});
  };
  return ir::compute(out, body, unique_name("T_dense", {data, weight}), "dense", {"i", "j"});
}

ir::Tensor dense_pack(const ir::Tensor& data, const ir::Tensor& packed_weight) {
  const Shape& w = packed_weight->shape;
  if (data->shape.size() != 2 || w.size() != 3)
    throw Error("dense_pack: data must be (M, K) and weight (N/bn, K, bn), got data " + shape_to_string(data->shape) +
                " and weight " + shape_to_string(w));
  if (w[1] != data->shape[1])
    throw Error("dense_pack: weight " + shape_to_string(w) + " has K=" + std::to_string(w[1]) + " but data " +
                shape_to_string(data->shape) + " has K=" + std::to_string(data->shape[1]));
  const int64_t bn = w[2];
  ir::IterVar k = ir::reduce_axis(data->shape[1], "k");
  auto body = [&](const std::vector<ir::Var>& v) {
    return ir::sum(ir::load(data, {v[0], k.var}) *
                       ir::load(packed_weight, {ir::floordiv(v[1], bn), k.var, ir::floormod(v[1], bn)}),
                   {k});
  };
  return ir::compute({data->shape[0], w[0] * bn}, body, unique_name("T_dense_pack", {data, packed_weight}),
                     "dense_pack", {"i", "j"}, {{"bn", std::to_string(bn)}});
}

int64_t dense_pack_block(int64_t n) {
  // Powers of two map onto whole vectors; a 40-wide block ran 5x slower than
  // an 8-wide one on 512->1000 (tessera op dense --layout packed --oc-bn 40).
  for (int64_t bn = 64; bn >= 8; bn /= 2)
    if (n % bn == 0) return bn;
  for (int64_t bn = 64; bn > 1; --bn)
    if (n % bn == 0) return bn;
  return 1;
}

std::vector<float> pack_dense_weight(const float* weight, int64_t n, int64_t k, int64_t bn) {
  if (bn <= 0 || n % bn != 0)
    throw Error("dense_pack: block " + std::to_string(bn) + " does not divide N=" + std::to_string(n));
  std::vector<float> out(n * k);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t kk = 0; kk < k; ++kk) out[((j / bn) * k + kk) * bn + j % bn] = weight[j * k + kk];
  return out;
}

ir::Tensor batch_matmul(const ir::Tensor& a, const ir::Tensor& b) {
  Shape out = batch_matmul_output_shape(a->shape, b->shape);
  ir::IterVar k = ir::reduce_axis(a->shape[2], "k");
  auto body = [&](const std::vector<ir::Var>& v) {
    return ir::sum(ir::load(a, {v[0], v[1], k.var}) * ir::load(b, {v[0], v[2], k.var}), {k});
  };
  return ir::compute(out, body, unique_name("T_batch_matmul_NT", {a, b}), "batch_matmul", {"b", "i", "j"});
}

}  // namespace tessera::ops
