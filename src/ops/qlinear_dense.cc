#include "ops/qlinear_dense.h"

#include <algorithm>

#include "ops/operator.h"
#include "ops/quantize.h"

namespace tessera::ops {

std::string QLinearDenseAttrs::to_string() const {
  return output.to_string(output.x_scale, 0, x_dtype) + " bias_folded" + (packed ? " packed" : "") +
         (centered ? " centered" : "");
}

void QLinearDenseAttrs::validate() const {
  QuantizeAttrs{output.x_scale, 0, x_dtype}.validate("qlinear_dense x");
  QuantizeAttrs{output.y_scale, output.y_zero_point, output.y_dtype}.validate("qlinear_dense y");
  if (centered && x_dtype != "uint8") fail("qlinear_dense", "centered products need uint8 x, got " + to_string());
}

Shape qlinear_dense_output_shape(const Shape& x, const Shape& w, const Shape& w_scale, const Shape& bias) {
  const std::string op = "qlinear_dense";
  check_rank(op, "x (M, K)", x, 2);
  check_rank(op, "w (N, K)", w, 2);
  if (x[1] != w[1])
    fail(op, "x " + shape_to_string(x) + " has K=" + std::to_string(x[1]) + ", w " + shape_to_string(w) +
                 " has K=" + std::to_string(w[1]));
  if (w_scale != Shape{w[0]})
    fail(op, "w_scale must be (" + std::to_string(w[0]) + "), got " + shape_to_string(w_scale));
  if (bias != Shape{w[0]}) fail(op, "bias must be (" + std::to_string(w[0]) + "), got " + shape_to_string(bias));
  return {x[0], w[0]};
}

int64_t qlinear_dense_block(int64_t n, int64_t k) {
  if (k % 4 != 0) return 0;
  for (int64_t bn = 64; bn >= 4; bn -= 4)
    if (n % bn == 0) return bn;
  return 0;
}

std::vector<float> pack_qlinear_dense_weight(const float* w, int64_t n, int64_t k, int64_t bn) {
  std::vector<float> packed(static_cast<size_t>(n * k));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < k; ++i)
      packed[static_cast<size_t>((((j / bn) * (k / 4) + i / 4) * bn + j % bn) * 4 + i % 4)] = w[j * k + i];
  return packed;
}

namespace {

// x * w, or centered (see the attribute).
ir::Expr product(ir::Expr x, ir::Expr w, const QLinearDenseAttrs& a) {
  return a.centered ? ir::centered_bytes_product(std::move(x), std::move(w)) : x * w;
}

ir::Tensor requantize(const ir::Tensor& acc, const ir::Tensor& w_scale, const ir::Tensor& bias,
                      const QLinearDenseAttrs& a) {
  auto body = [&](const std::vector<ir::Var>& v) {
    return requantized(ir::load(acc, {v[0], v[1]}) + ir::load(bias, {v[1]}), ir::load(w_scale, {v[1]}), a.output,
                       "qlinear_dense");
  };
  return ir::compute(acc->shape, body, unique_name("T_requantize", {acc}), "qlinear_dense_requantize", {"i", "j"},
                     {{"quantization", a.to_string()}});
}

}  // namespace

ir::Tensor qlinear_dense_pack(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor& w_scale,
                              const ir::Tensor& bias, const QLinearDenseAttrs& a) {
  a.validate();
  const Shape& p = w->shape;  // (N/bn, K/4, bn, 4)
  if (x->shape.size() != 2 || p.size() != 4 || p[3] != 4 || p[1] * 4 != x->shape[1])
    fail("qlinear_dense", "x must be (M, K) and the packed weight (N/bn, K/4, bn, 4), got x " +
                              shape_to_string(x->shape) + " and weight " + shape_to_string(p));
  const int64_t bn = p[2];
  const ir::IterVar k_outer = ir::reduce_axis(p[1], "k_outer"), k_4 = ir::reduce_axis(4, "k_4");
  auto products = [&](const std::vector<ir::Var>& v) {
    const ir::Expr column = ir::Expr(k_outer.var) * ir::Expr(int64_t{4}) + ir::Expr(k_4.var);
    return ir::sum(product(ir::load(x, {v[0], column}),
                           ir::load(w, {ir::floordiv(v[1], bn), k_outer.var, ir::floormod(v[1], bn), k_4.var}), a),
                   {k_outer, k_4});
  };
  const ir::Tensor acc = ir::compute({x->shape[0], p[0] * bn}, products, unique_name("qlinear_dense_pack", {x, w}),
                                     "qlinear_dense_pack", {"i", "j"}, {{"bn", std::to_string(bn)}});
  return requantize(acc, w_scale, bias, a);
}

ir::Tensor qlinear_dense(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor& w_scale, const ir::Tensor& bias,
                         const QLinearDenseAttrs& a) {
  a.validate();
  const Shape out = qlinear_dense_output_shape(x->shape, w->shape, w_scale->shape, bias->shape);
  const ir::IterVar k = ir::reduce_axis(x->shape[1], "k");
  auto products = [&](const std::vector<ir::Var>& v) {
    return ir::sum(product(ir::load(x, {v[0], k.var}), ir::load(w, {v[1], k.var}), a), {k});
  };
  const ir::Tensor acc = ir::compute(out, products, unique_name("qlinear_dense", {x, w}), "qlinear_dense", {"i", "j"});
  return requantize(acc, w_scale, bias, a);
}

namespace reference {

void qlinear_dense(const float* x, const float* w, const float* w_scale, const float* bias, int64_t m, int64_t n,
                   int64_t k, const QLinearDenseAttrs& a, float* y) {
  const auto [lo, hi] = a.output.saturation("qlinear_dense");
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t acc = static_cast<int64_t>(bias[j]);
      for (int64_t l = 0; l < k; ++l) {
        const auto xv = static_cast<int64_t>(x[i * k + l]), wv = static_cast<int64_t>(w[j * k + l]);
        acc += a.centered ? (xv - 128) * std::max<int64_t>(wv, -127) : xv * wv;
      }
      y[i * n + j] = requantized(acc, w_scale[j], a.output, lo, hi);
    }
}

}  // namespace reference

}  // namespace tessera::ops

TESSERA_OPERATOR(qlinear_dense) {
  using namespace tessera::ops;
  Operator op;
  op.name = "qlinear_dense";
  op.num_inputs = 4;  // x, w, w_scale, bias (x's zero point folded)
  op.pattern = FusionPattern::kAnchor;
  op.default_attrs = QLinearDenseAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    attrs.as<QLinearDenseAttrs>().validate();
    return qlinear_dense_output_shape(in[0], in[1], in[2], in[3]);
  };
  op.infer_dtype = [](const std::vector<tessera::ir::DType>& in, const Attrs& attrs) {
    const auto& a = attrs.as<QLinearDenseAttrs>();
    return int8_anchor_dtype("qlinear_dense", a.x_dtype, a.output.y_dtype, in);
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const Shape &x = call.input_shapes[0], &w = call.input_shapes[1];
    reference::qlinear_dense(in[0], in[1], in[2], in[3], x[0], w[0], x[1], call.attrs.as<QLinearDenseAttrs>(), y);
  };
  // A weight marked packed (constant, unsigned x) with K a multiple of 4 is
  // stored packed for the byte dot product; otherwise the kernel reads it as it is.
  const auto packed_block = [](const OperatorCall& call) -> int64_t {
    const Shape& w = call.input_shapes.at(1);
    const auto& a = call.attrs.as<QLinearDenseAttrs>();
    return a.packed && call.constant_inputs.at(1) && a.x_dtype == "uint8" ? qlinear_dense_block(w[0], w[1]) : 0;
  };
  StoredConstant stored;
  stored.shape = [packed_block](const OperatorCall& call, size_t input, const Shape& shape) {
    const int64_t bn = input == 1 ? packed_block(call) : 0;
    return bn ? Shape{shape[0] / bn, shape[1] / 4, bn, 4} : shape;
  };
  stored.values = [packed_block](const OperatorCall& call, size_t input, const float* value, const Shape& shape) {
    const int64_t bn = input == 1 ? packed_block(call) : 0;
    return bn ? pack_qlinear_dense_weight(value, shape[0], shape[1], bn)
              : std::vector<float>(value, value + num_elements(shape));
  };
  op.stored_constant = stored;
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    const auto& a = call.attrs.as<QLinearDenseAttrs>();
    return in[1]->shape.size() == 4 ? qlinear_dense_pack(in[0], in[1], in[2], in[3], a)
                                    : qlinear_dense(in[0], in[1], in[2], in[3], a);
  };
  return op;
}
