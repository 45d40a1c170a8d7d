#include "ops/unary_math.h"

#include <cmath>
#include <functional>

#include "ops/operator.h"

namespace tessera::ops {

std::string HardSigmoidAttrs::to_string() const {
  return "alpha=" + number_to_string(alpha) + " beta=" + number_to_string(beta);
}

// The references compute in double and round once: an independent check of
// the kernels' single-precision polynomials.
float erf_of(float x) { return static_cast<float>(std::erf(static_cast<double>(x))); }

float gelu_of(float x, bool tanh_approximation) {
  const double v = x;
  if (tanh_approximation) {
    const double inner = std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v);
    return static_cast<float>(0.5 * v * (1.0 + std::tanh(inner)));
  }
  return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
}

// NaN stays NaN (a comparison with NaN is false), as in onnxruntime.
float hard_sigmoid_of(float x, float alpha, float beta) {
  const float y = alpha * x + beta;
  return y < 0.0f ? 0.0f : y > 1.0f ? 1.0f : y;
}

float silu_of(float x) { return static_cast<float>(x / (1.0 + std::exp(-static_cast<double>(x)))); }

namespace {

// y[i] = f(x[i]) as a tensor expression named after the operator.
ir::Tensor pointwise(const std::string& name, const ir::Tensor& x, const std::function<ir::Expr(ir::Expr)>& f) {
  auto body = [&](const std::vector<ir::Var>& v) { return f(ir::load(x, to_exprs(v))); };
  return ir::compute(x->shape, body, unique_name("T_" + name, {x}), "elemwise", ax_names(x->shape.size()));
}

ir::Expr constant(double v) { return ir::make_float(v); }

// A unary operator whose reference is `scalar` and whose declaration applies
// `expression` to each element.
Operator math_operator(const std::string& name, float (*scalar)(float), ir::Expr (*expression)(ir::Expr)) {
  Operator op = unary_elementwise_operator(name);
  op.reference = [scalar](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    reference_unary(call, in, y, scalar);
  };
  op.compute = [name, expression](const OperatorCall&, const std::vector<ir::Tensor>& in) {
    return pointwise(name, in[0], expression);
  };
  return op;
}

}  // namespace

ir::Tensor gelu(const ir::Tensor& x, const GeluAttrs& attrs) {
  return pointwise("gelu", x, [&](ir::Expr v) {
    if (attrs.tanh_approximation) {
      const ir::Expr inner = constant(std::sqrt(2.0 / M_PI)) * (v + constant(0.044715) * v * v * v);
      return constant(0.5) * v * (constant(1.0) + ir::call("tanh", {inner}));
    }
    return constant(0.5) * v * (constant(1.0) + ir::call("erf", {v * constant(M_SQRT1_2)}));
  });
}

ir::Tensor hard_sigmoid(const ir::Tensor& x, const HardSigmoidAttrs& attrs) {
  return pointwise("hard_sigmoid", x, [&](ir::Expr v) {
    const ir::Expr y = constant(attrs.alpha) * v + constant(attrs.beta);
    return ir::select(y < constant(0.0), constant(0.0), ir::select(y > constant(1.0), constant(1.0), y));
  });
}

}  // namespace tessera::ops

TESSERA_OPERATOR(erf) {
  using namespace tessera::ops;
  return math_operator("erf", erf_of, [](tessera::ir::Expr v) { return tessera::ir::call("erf", {v}); });
}

TESSERA_OPERATOR(tanh) {
  using namespace tessera::ops;
  return math_operator(
      "tanh", [](float x) { return static_cast<float>(std::tanh(static_cast<double>(x))); },
      [](tessera::ir::Expr v) { return tessera::ir::call("tanh", {v}); });
}

TESSERA_OPERATOR(exp) {
  using namespace tessera::ops;
  return math_operator(
      "exp", [](float x) { return static_cast<float>(std::exp(static_cast<double>(x))); },
      [](tessera::ir::Expr v) { return tessera::ir::exp(v); });
}

TESSERA_OPERATOR(log) {
  using namespace tessera::ops;
  return math_operator(
      "log", [](float x) { return static_cast<float>(std::log(static_cast<double>(x))); },
      [](tessera::ir::Expr v) { return tessera::ir::call("log", {v}); });
}

TESSERA_OPERATOR(sqrt) {
  using namespace tessera::ops;
  return math_operator(
      "sqrt", [](float x) { return static_cast<float>(std::sqrt(static_cast<double>(x))); },
      [](tessera::ir::Expr v) { return tessera::ir::call("sqrt", {v}); });
}

TESSERA_OPERATOR(reciprocal) {
  using namespace tessera::ops;
  return math_operator(
      "reciprocal", [](float x) { return 1.0f / x; },
      [](tessera::ir::Expr v) { return tessera::ir::make_float(1.0) / v; });
}

TESSERA_OPERATOR(negative) {
  using namespace tessera::ops;
  return math_operator(
      "negative", [](float x) { return -x; }, [](tessera::ir::Expr v) { return -v; });
}

TESSERA_OPERATOR(abs) {
  using namespace tessera::ops;
  return math_operator(
      "abs", [](float x) { return std::fabs(x); }, [](tessera::ir::Expr v) { return tessera::ir::call("fabs", {v}); });
}

// To the nearest integer, halves to even (ONNX's Round; the rounding of
// ops/quantize.h, here for a scale known only at run time).
TESSERA_OPERATOR(round) {
  using namespace tessera::ops;
  return math_operator(
      "round", [](float x) { return std::nearbyint(x); },
      [](tessera::ir::Expr v) { return tessera::ir::call("round", {v}); });
}

TESSERA_OPERATOR(silu) {
  using namespace tessera::ops;
  return math_operator("silu", silu_of, [](tessera::ir::Expr v) { return v * tessera::ir::call("sigmoid", {v}); });
}

TESSERA_OPERATOR(gelu) {
  using namespace tessera::ops;
  Operator op = unary_elementwise_operator("gelu");
  op.default_attrs = GeluAttrs{};
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const bool tanh_form = call.attrs.as<GeluAttrs>().tanh_approximation;
    const int64_t n = num_elements(call.output_shape);
    for (int64_t i = 0; i < n; ++i) y[i] = gelu_of(in[0][i], tanh_form);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    return gelu(in[0], call.attrs.as<GeluAttrs>());
  };
  return op;
}

TESSERA_OPERATOR(hard_sigmoid) {
  using namespace tessera::ops;
  Operator op = unary_elementwise_operator("hard_sigmoid");
  op.default_attrs = HardSigmoidAttrs{};
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const auto& a = call.attrs.as<HardSigmoidAttrs>();
    const int64_t n = num_elements(call.output_shape);
    for (int64_t i = 0; i < n; ++i) y[i] = hard_sigmoid_of(in[0][i], a.alpha, a.beta);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    return hard_sigmoid(in[0], call.attrs.as<HardSigmoidAttrs>());
  };
  return op;
}
