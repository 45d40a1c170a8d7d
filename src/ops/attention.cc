// attention: scaled dot-product attention as one kernel (issue 28). The
// graph pass recognize_attention makes it of batch_matmul -> scale -> mask
// -> softmax -> batch_matmul; here are its shapes, its reference (the
// product, softmax and product in double) and its compute: per tile of
// query rows the scores, their maximum, exponentials and sum, and the
// weighted sum of values, so the score matrix exists one tile at a time.
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/operator.h"

namespace tessera::ops {

std::string AttentionAttrs::to_string() const {
  return "scale=" + number_to_string(scale) + " heads=" + std::to_string(heads) +
         (has_mask ? " mask" : "") + " rows=" + std::to_string(rows);
}

namespace {

Shape attention_shape(const std::vector<Shape>& in, const AttentionAttrs& a) {
  const size_t expected = a.has_mask ? 4 : 3;
  if (in.size() != expected) shape_error("takes " + std::to_string(expected) + " inputs, got " + std::to_string(in.size()));
  const Shape &q = in[0], &k = in[1], &v = in[2];
  if (q.size() != 3 || k.size() != 3 || v.size() != 3)
    shape_error("q, k and v must be (B, M, D), (B, N, D), (B, N, D), got " + shape_to_string(q) + ", " +
                shape_to_string(k) + ", " + shape_to_string(v));
  if (k != v || q[0] != k[0] || q[2] != k[2])
    shape_error("q " + shape_to_string(q) + ", k " + shape_to_string(k) + " and v " + shape_to_string(v) +
                " differ in B, N or D");
  if (a.heads < 1 || q[0] % a.heads != 0)
    shape_error("heads " + std::to_string(a.heads) + " does not divide B=" + std::to_string(q[0]));
  if (a.rows < 1) shape_error("rows must be positive");
  if (a.has_mask) {
    const Shape& m = in[3];
    const Shape full = {q[0] / a.heads, a.heads, q[1], k[1]};
    if (m.size() != 4) shape_error("the mask must have four axes (groups, heads, M, N), got " + shape_to_string(m));
    for (size_t d = 0; d < 4; ++d)
      if (m[d] != 1 && m[d] != full[d])
        shape_error("mask " + shape_to_string(m) + " does not broadcast to " + shape_to_string(full));
  }
  return q;
}

// The mask's offset for score (b, i, j): (group, head, i, j) broadcast.
int64_t mask_offset(const Shape& m, int64_t heads, int64_t b, int64_t i, int64_t j) {
  return broadcast_offset(m, {b / heads, b % heads, i, j});
}

void reference_attention(const OperatorCall& call, const std::vector<const float*>& in, float* y) {
  const auto& a = call.attrs.as<AttentionAttrs>();
  const Shape &q = call.input_shapes[0], &k = call.input_shapes[1];
  const int64_t batch = q[0], m = q[1], n = k[1], d = q[2];
  std::vector<double> s(static_cast<size_t>(n));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i) {
      double top = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += double{in[0][(b * m + i) * d + c]} * in[1][(b * n + j) * d + c];
        s[j] = dot * a.scale + (a.has_mask ? in[3][mask_offset(call.input_shapes[3], a.heads, b, i, j)] : 0.0);
        top = std::max(top, s[j]);
      }
      double sum = 0;
      for (double& e : s) sum += (e = std::exp(e - top));
      for (int64_t c = 0; c < d; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < n; ++j) acc += s[j] * in[2][(b * n + j) * d + c];
        y[(b * m + i) * d + c] = static_cast<float>(acc / sum);
      }
    }
}

ir::Tensor attention(const OperatorCall& call, const std::vector<ir::Tensor>& in) {
  const auto& a = call.attrs.as<AttentionAttrs>();
  const ir::Tensor &q = in[0], &k = in[1], &v = in[2];
  const int64_t batch = q->shape[0], m = q->shape[1], n = k->shape[1], d = q->shape[2];
  // k transposed to (B, D, N): a score row's vectors then load N-contiguous keys.
  const ir::Tensor kt = ir::compute(
      {batch, d, n}, [&](const std::vector<ir::Var>& x) { return ir::load(k, {x[0], x[2], x[1]}); },
      unique_name("T_attention_kT", {k}), "attention_transpose_k", {"b", "c", "j"}, {{"layout_copy", "1"}});
  ir::IterVar c = ir::reduce_axis(d, "c");
  const ir::Tensor scores = ir::compute(
      {batch, m, n},
      [&](const std::vector<ir::Var>& x) {
        ir::Expr s = ir::sum(ir::load(q, {x[0], x[1], c.var}) * ir::load(kt, {x[0], c.var, x[2]}), {c});
        return s;
      },
      unique_name("T_attention_scores", {q, k}), "attention_scores", {"b", "i", "j"});
  auto scaled = [&](const std::vector<ir::Expr>& at) {
    ir::Expr s = ir::load(scores, at) * ir::make_float(a.scale);
    if (!a.has_mask) return s;
    const ir::Tensor& mask = in[3];
    const ir::Expr h = ir::make_int(a.heads);
    const std::vector<ir::Expr> full = {ir::floordiv(at[0], h), ir::floormod(at[0], h), at[1], at[2]};
    std::vector<ir::Expr> idx;
    for (size_t dd = 0; dd < 4; ++dd) idx.push_back(mask->shape[dd] == 1 ? ir::make_int(0) : full[dd]);
    return s + ir::load(mask, idx);
  };
  ir::IterVar j1 = ir::reduce_axis(n, "j");
  const ir::Tensor top = ir::compute(
      {batch, m}, [&](const std::vector<ir::Var>& x) { return ir::reduce_max(scaled({x[0], x[1], j1.var}), {j1}); },
      unique_name("T_attention_max", {scores}), "attention_softmax", {"b", "i"});
  const ir::Tensor e = ir::compute(
      {batch, m, n},
      [&](const std::vector<ir::Var>& x) { return ir::exp(scaled(to_exprs(x)) - ir::load(top, {x[0], x[1]})); },
      unique_name("T_attention_exp", {top}), "attention_softmax", {"b", "i", "j"});
  ir::IterVar j2 = ir::reduce_axis(n, "j");
  const ir::Tensor sum = ir::compute(
      {batch, m}, [&](const std::vector<ir::Var>& x) { return ir::sum(ir::load(e, {x[0], x[1], j2.var}), {j2}); },
      unique_name("T_attention_sum", {e}), "attention_softmax", {"b", "i"});
  ir::IterVar j3 = ir::reduce_axis(n, "j");
  const ir::Tensor weighted = ir::compute(
      {batch, m, d},
      [&](const std::vector<ir::Var>& x) {
        return ir::sum(ir::load(e, {x[0], x[1], j3.var}) * ir::load(v, {x[0], j3.var, x[2]}), {j3});
      },
      unique_name("T_attention_weighted", {e, v}), "attention_values", {"b", "i", "c"});
  return ir::compute(
      {batch, m, d},
      [&](const std::vector<ir::Var>& x) { return ir::load(weighted, to_exprs(x)) / ir::load(sum, {x[0], x[1]}); },
      unique_name("T_attention", {weighted, sum}), "attention", {"b", "i", "c"},
      {{"rows", std::to_string(a.rows)}});
}

}  // namespace
}  // namespace tessera::ops

TESSERA_OPERATOR(attention) {
  using namespace tessera::ops;
  Operator op;
  op.name = "attention";
  op.num_inputs = Operator::kVariadic;  // q, k, v and an optional mask
  op.default_attrs = AttentionAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    return attention_shape(in, attrs.as<AttentionAttrs>());
  };
  op.reference = reference_attention;
  op.compute = attention;
  return op;
}
