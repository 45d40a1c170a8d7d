#include "ops/quantize.h"

#include <algorithm>
#include <cmath>

#include "ops/operator.h"

namespace tessera::ops {

std::string QuantizeAttrs::to_string() const {
  return "scale=" + number_to_string(scale) + " zero_point=" + std::to_string(zero_point) + " dtype=" + dtype;
}

ir::DType quantized_type(const std::string& op, const std::string& dtype) {
  if (dtype == "int8") return ir::DType::Int8;
  if (dtype == "uint8") return ir::DType::UInt8;
  fail(op, "a quantized tensor is int8 or uint8, got dtype " + dtype);
}

int64_t quantized_min(ir::DType t) { return t == ir::DType::UInt8 ? 0 : -128; }
int64_t quantized_max(ir::DType t) { return t == ir::DType::UInt8 ? 255 : 127; }

std::pair<int64_t, int64_t> output_range(const std::string& op, const std::string& dtype, int64_t zero_point,
                                         bool relu) {
  const ir::DType t = quantized_type(op, dtype);
  return {relu ? std::max(zero_point, quantized_min(t)) : quantized_min(t), quantized_max(t)};
}

void QuantizeAttrs::validate(const std::string& op) const {
  if (!(scale > 0.0f) || !std::isfinite(scale)) fail(op, "scale must be positive and finite, got " + number_to_string(scale));
  const ir::DType t = quantized_type(op, dtype);
  if (zero_point < quantized_min(t) || zero_point > quantized_max(t))
    fail(op, "zero_point " + std::to_string(zero_point) + " is outside " + dtype + "'s range");
}

namespace {

// The float arithmetic both sides share, in one order: x / scale, rounded
// (halves to even), moved by the zero point, saturated.
float quantized_value(float x, float scale, float zero_point, float lo, float hi) {
  return std::min(std::max(std::nearbyint(x / scale) + zero_point, lo), hi);
}

}  // namespace

ir::Tensor quantize(const ir::Tensor& x, const QuantizeAttrs& a) {
  a.validate("quantize");
  const ir::DType t = quantized_type("quantize", a.dtype);
  const ir::Expr lo(static_cast<float>(quantized_min(t))), hi(static_cast<float>(quantized_max(t)));
  auto body = [&](const std::vector<ir::Var>& v) {
    const ir::Expr scaled = ir::load(x, to_exprs(v)) / ir::Expr(a.scale);
    const ir::Expr q = ir::call("round", {scaled}) + ir::Expr(static_cast<float>(a.zero_point));
    return ir::cast(t, ir::min(ir::max(q, lo), hi));
  };
  return ir::compute(x->shape, body, unique_name("T_quantize", {x}), "elemwise", ax_names(x->shape.size()));
}

ir::Tensor dequantize(const ir::Tensor& q, const QuantizeAttrs& a) {
  a.validate("dequantize");
  auto body = [&](const std::vector<ir::Var>& v) {
    // The difference in int32 (exact), then one float multiplication.
    const ir::Expr centred = ir::load(q, to_exprs(v)) - ir::Expr(a.zero_point);
    return ir::cast(ir::DType::Float32, centred) * ir::Expr(a.scale);
  };
  return ir::compute(q->shape, body, unique_name("T_dequantize", {q}), "elemwise", ax_names(q->shape.size()));
}

ir::Tensor dequantize_per_channel(const ir::Tensor& q, const ir::Tensor& scale, const ir::Tensor& zero_point,
                                  const DequantizePerChannelAttrs& attrs) {
  const auto axis = static_cast<size_t>(attrs.axis);
  auto body = [&](const std::vector<ir::Var>& v) {
    const std::vector<ir::Expr> c{v[axis]};
    const ir::Expr centred = ir::cast(ir::DType::Float32, ir::load(q, to_exprs(v))) - ir::load(zero_point, c);
    return centred * ir::load(scale, c);
  };
  return ir::compute(q->shape, body, unique_name("T_dequantize", {q, scale}), "broadcast", ax_names(q->shape.size()));
}

namespace reference {

void dequantize_per_channel(const float* q, const Shape& shape, const float* scale, const float* zero_point,
                            int64_t axis, float* r) {
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t channels = shape[static_cast<size_t>(axis)], n = num_elements(shape);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = (i / inner) % channels;
    r[i] = (q[i] - zero_point[c]) * scale[c];
  }
}

void quantize(const float* x, int64_t n, const QuantizeAttrs& a, float* q) {
  const ir::DType t = quantized_type("quantize", a.dtype);
  const float lo = static_cast<float>(quantized_min(t)), hi = static_cast<float>(quantized_max(t));
  for (int64_t i = 0; i < n; ++i) q[i] = quantized_value(x[i], a.scale, static_cast<float>(a.zero_point), lo, hi);
}

void dequantize(const float* q, int64_t n, const QuantizeAttrs& a, float* r) {
  for (int64_t i = 0; i < n; ++i)
    r[i] = static_cast<float>(static_cast<int32_t>(q[i]) - static_cast<int32_t>(a.zero_point)) * a.scale;
}

}  // namespace reference

}  // namespace tessera::ops

namespace {

tessera::ops::Operator quantization_operator(const std::string& name) {
  using namespace tessera::ops;
  Operator op = unary_elementwise_operator(name);
  op.default_attrs = QuantizeAttrs{};
  op.infer_shape = [name](const std::vector<Shape>& in, const Attrs& attrs) {
    attrs.as<QuantizeAttrs>().validate(name);
    return in[0];
  };
  return op;
}

}  // namespace

TESSERA_OPERATOR(quantize) {
  using namespace tessera::ops;
  Operator op = quantization_operator("quantize");
  op.infer_dtype = [](const std::vector<tessera::ir::DType>& in, const Attrs& attrs) {
    if (in[0] != tessera::ir::DType::Float32) fail("quantize", "quantizes float32, got " + tessera::ir::to_string(in[0]));
    return quantized_type("quantize", attrs.as<QuantizeAttrs>().dtype);
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    reference::quantize(in[0], num_elements(call.output_shape), call.attrs.as<QuantizeAttrs>(), y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    return quantize(in[0], call.attrs.as<QuantizeAttrs>());
  };
  return op;
}

TESSERA_OPERATOR(dequantize) {
  using namespace tessera::ops;
  Operator op = quantization_operator("dequantize");
  op.infer_dtype = [](const std::vector<tessera::ir::DType>& in, const Attrs& attrs) {
    const auto& a = attrs.as<QuantizeAttrs>();
    // A float32 input holds integers too (the interpreter's view of a graph
    // input or of a constant not typed): it is read as such.
    if (in[0] != tessera::ir::DType::Float32 && in[0] != quantized_type("dequantize", a.dtype))
      fail("dequantize", "input is " + tessera::ir::to_string(in[0]) + ", attributes say " + a.dtype);
    return tessera::ir::DType::Float32;
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    reference::dequantize(in[0], num_elements(call.output_shape), call.attrs.as<QuantizeAttrs>(), y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    return dequantize(in[0], call.attrs.as<QuantizeAttrs>());
  };
  return op;
}

TESSERA_OPERATOR(dequantize_per_channel) {
  using namespace tessera::ops;
  Operator op;
  op.name = "dequantize_per_channel";
  op.num_inputs = 3;
  op.pattern = FusionPattern::kElementwise;
  op.default_attrs = DequantizePerChannelAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    const int64_t axis = attrs.as<DequantizePerChannelAttrs>().axis;
    if (axis < 0 || axis >= static_cast<int64_t>(in[0].size()))
      fail("dequantize_per_channel", "axis " + std::to_string(axis) + " is outside " + shape_to_string(in[0]));
    const Shape channels{in[0][static_cast<size_t>(axis)]};
    if (in[1] != channels || in[2] != channels)
      fail("dequantize_per_channel", "scale " + shape_to_string(in[1]) + " and zero point " + shape_to_string(in[2]) +
                                         " must each hold one value per element of axis " + std::to_string(axis) +
                                         " of " + shape_to_string(in[0]));
    return in[0];
  };
  op.infer_dtype = [](const std::vector<tessera::ir::DType>& in, const Attrs&) {
    using tessera::ir::DType;
    if (in[0] != DType::Int8 && in[0] != DType::UInt8 && in[0] != DType::Int32 && in[0] != DType::Float32)
      fail("dequantize_per_channel", "dequantizes int8, uint8 or int32, got " + tessera::ir::to_string(in[0]));
    return DType::Float32;
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    reference::dequantize_per_channel(in[0], call.output_shape, in[1], in[2],
                                      call.attrs.as<DequantizePerChannelAttrs>().axis, y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    return dequantize_per_channel(in[0], in[1], in[2], call.attrs.as<DequantizePerChannelAttrs>());
  };
  return op;
}
