#include "ops/qlinear_add.h"

#include <algorithm>
#include <cmath>

#include "ops/operator.h"

namespace tessera::ops {

std::string QLinearAddAttrs::to_string() const {
  return "a=(" + a.to_string() + ") b=(" + b.to_string() + ") y=(" + y.to_string() + ")" + (relu ? " relu" : "");
}

void QLinearAddAttrs::validate() const {
  a.validate("qlinear_add a");
  b.validate("qlinear_add b");
  y.validate("qlinear_add y");
}

AddMultipliers add_multipliers(const QLinearAddAttrs& attrs) {
  const double ra = static_cast<double>(attrs.a.scale) / attrs.y.scale;
  const double rb = static_cast<double>(attrs.b.scale) / attrs.y.scale;
  // |a - a_zp| and |b - b_zp| are at most 255; the rounding term adds 2^(shift-1).
  const double largest = 255.0 * (ra + rb);
  int shift = 24;
  while (shift > 0 && largest * std::ldexp(1.0, shift) + std::ldexp(1.0, shift - 1) >= 2147483647.0) --shift;
  if (shift < 8)
    fail("qlinear_add", "scales " + attrs.a.to_string() + ", " + attrs.b.to_string() + " over " + attrs.y.to_string() +
                            " leave fewer than 8 bits of the multipliers' fraction in 32-bit arithmetic");
  return {static_cast<int64_t>(std::llround(std::ldexp(ra, shift))), static_cast<int64_t>(std::llround(std::ldexp(rb, shift))),
          shift};
}

ir::Tensor qlinear_add(const ir::Tensor& a, const ir::Tensor& b, const QLinearAddAttrs& attrs) {
  attrs.validate();
  if (a->shape != b->shape)
    fail("qlinear_add", "adds tensors of one shape, got " + shape_to_string(a->shape) + " and " +
                            shape_to_string(b->shape));
  const auto [lo, hi] = output_range("qlinear_add", attrs.y.dtype, attrs.y.zero_point, attrs.relu);
  const AddMultipliers m = add_multipliers(attrs);
  auto scaled = [](const ir::Tensor& q, const QuantizeAttrs& qa, int64_t multiplier, const std::vector<ir::Var>& v) {
    return (ir::load(q, to_exprs(v)) - ir::Expr(qa.zero_point)) * ir::Expr(multiplier);
  };
  auto body = [&](const std::vector<ir::Var>& v) {
    const ir::Expr sum = scaled(a, attrs.a, m.a, v) + scaled(b, attrs.b, m.b, v) + ir::Expr(int64_t{1} << (m.shift - 1));
    const ir::Expr q = ir::floordiv(sum, ir::Expr(int64_t{1} << m.shift)) + ir::Expr(attrs.y.zero_point);
    return ir::cast(quantized_type("qlinear_add", attrs.y.dtype),
                    ir::min(ir::max(q, ir::Expr(lo)), ir::Expr(hi)));
  };
  return ir::compute(a->shape, body, unique_name("T_qlinear_add", {a, b}), "elemwise", ax_names(a->shape.size()));
}

namespace reference {

void qlinear_add(const float* a, const float* b, int64_t n, const QLinearAddAttrs& attrs, float* y) {
  const auto [lo, hi] = output_range("qlinear_add", attrs.y.dtype, attrs.y.zero_point, attrs.relu);
  const AddMultipliers m = add_multipliers(attrs);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t sum = (static_cast<int64_t>(a[i]) - attrs.a.zero_point) * m.a +
                        (static_cast<int64_t>(b[i]) - attrs.b.zero_point) * m.b + (int64_t{1} << (m.shift - 1));
    // Floor division by 2^shift (an arithmetic shift): halves round up.
    const int64_t q = (sum >> m.shift) + attrs.y.zero_point;
    y[i] = static_cast<float>(std::clamp(q, lo, hi));
  }
}

}  // namespace reference

}  // namespace tessera::ops

TESSERA_OPERATOR(qlinear_add) {
  using namespace tessera::ops;
  Operator op;
  op.name = "qlinear_add";
  op.num_inputs = 2;
  op.pattern = FusionPattern::kElementwise;
  op.default_attrs = QLinearAddAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    attrs.as<QLinearAddAttrs>().validate();
    if (in[0] != in[1])
      fail("qlinear_add", "adds tensors of one shape, got " + shape_to_string(in[0]) + " and " + shape_to_string(in[1]));
    return in[0];
  };
  op.infer_dtype = [](const std::vector<tessera::ir::DType>& in, const Attrs& attrs) {
    const auto& a = attrs.as<QLinearAddAttrs>();
    const QuantizeAttrs* sides[] = {&a.a, &a.b};
    for (size_t i = 0; i < 2; ++i)
      if (in[i] != quantized_type("qlinear_add", sides[i]->dtype))
        fail("qlinear_add", std::string(i ? "b" : "a") + " is " + tessera::ir::to_string(in[i]) + ", attributes say " +
                                sides[i]->dtype);
    return quantized_type("qlinear_add", a.y.dtype);
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    reference::qlinear_add(in[0], in[1], num_elements(call.output_shape), call.attrs.as<QLinearAddAttrs>(), y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    return qlinear_add(in[0], in[1], call.attrs.as<QLinearAddAttrs>());
  };
  return op;
}
