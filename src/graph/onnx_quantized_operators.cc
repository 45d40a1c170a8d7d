// QuantizeLinear and DequantizeLinear as onnxruntime's quantize_static writes
// them (QDQ): an activation quantized per tensor (a constant scalar scale and
// zero point, whose type says int8 or uint8) becomes the quantize /
// dequantize operators (ops/quantize.h); a DequantizeLinear of constants
// (int8 weights per output channel along `axis`, int32 biases) becomes
// dequantize_per_channel of its integers. graph::fuse_quantized_operators
// then makes each pattern of float operators between pairs that has an int8
// kernel that kernel (qlinear_conv2d, qlinear_add, int8 max pooling); the
// rest runs as onnxruntime defines it, in float between the pairs.
#include <algorithm>

#include "graph/onnx_importer.h"
#include "ops/quantize.h"
#include "ops/reduce.h"

namespace tessera::graph::onnx_importer {

namespace {

std::string quantized_dtype(int element_type) {
  if (element_type == onnx::TensorProto::INT8) return "int8";
  if (element_type == onnx::TensorProto::UINT8) return "uint8";
  return "";
}

}  // namespace

void Importer::convert_quantize_linear(const onnx::NodeProto& n) {
  require_inputs(n, 2);
  const runtime::NDArray* scale = constant_of(n, 1);
  if (!scale || scale->size() != 1)
    fail(describe(n) + ": only a per-tensor quantization (a constant scalar scale) is supported");
  ops::QuantizeAttrs a{scale->data()[0], 0, "uint8"};  // ONNX's default zero point: uint8 0
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const Value& zp = value(n.input(2), describe(n));
    a.dtype = quantized_dtype(zp.element_type);
    if (!zp.ints || zp.ints->size() != 1 || a.dtype.empty())
      fail(describe(n) + ": the zero point must be a constant int8 or uint8 scalar");
    a.zero_point = (*zp.ints)[0];
  }
  set_output(n, b_.add_node(Op::named("quantize"), name_of(n), {activation(n.input(0), describe(n))}, a));
}

void Importer::convert_dequantize_linear(const onnx::NodeProto& n) {
  require_inputs(n, 2);
  const Value& x = value(n.input(0), describe(n));
  const runtime::NDArray* scale = constant_of(n, 1);
  if (!scale) fail(describe(n) + ": the scale must be a constant");
  std::vector<int64_t> zero_points(1, 0);
  if (n.input_size() > 2 && !n.input(2).empty()) zero_points = ints(n, 2);
  if (x.ints && !x.ints_shape.empty()) {
    // Constants (weights, biases): (q - zero_point[c]) * scale[c] along the
    // axis, kept as a node over the integers so that fuse_quantized_operators
    // can give them to an int8 kernel as they are; fold_constants evaluates
    // the rest (constant_of sees its values now).
    const Shape& shape = x.ints_shape;
    int64_t axis = attr_int(n, "axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(shape.size());
    axis = std::clamp<int64_t>(axis, 0, static_cast<int64_t>(shape.size()) - 1);
    const int64_t channels = shape[static_cast<size_t>(axis)];
    const auto per = [&](int64_t size) { return size == 1 || size == channels; };
    if (!per(scale->size()) || !per(static_cast<int64_t>(zero_points.size())))
      fail(describe(n) + ": scale and zero point must hold one value or one per element of axis " +
           std::to_string(axis));
    runtime::NDArray q(shape), scales({channels}), zeros({channels});
    for (int64_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>((*x.ints)[static_cast<size_t>(i)]);
    for (int64_t c = 0; c < channels; ++c) {
      scales[c] = scale->data()[scale->size() == 1 ? 0 : c];
      zeros[c] = static_cast<float>(zero_points[zero_points.size() == 1 ? 0 : static_cast<size_t>(c)]);
    }
    const DataType stored = x.element_type == onnx::TensorProto::INT8    ? DataType::kInt8
                            : x.element_type == onnx::TensorProto::UINT8 ? DataType::kUInt8
                            : x.element_type == onnx::TensorProto::INT32 ? DataType::kInt32
                                                                         : DataType::kFloat32;
    const std::string name = clean(n.input(0));
    return set_output(
        n, b_.add_node(Op::named("dequantize_per_channel"), name_of(n),
                       {b_.constant(name, std::move(q), stored), b_.constant(name + ".scale", std::move(scales)),
                        b_.constant(name + ".zero_point", std::move(zeros))},
                       ops::DequantizePerChannelAttrs{axis}));
  }
  if (x.ints) {  // a scalar constant: its value now
    if (scale->size() != 1 || zero_points.size() != 1) fail(describe(n) + ": a scalar takes one scale and zero point");
    runtime::NDArray out({1});
    out[0] = static_cast<float>((*x.ints)[0] - zero_points[0]) * scale->data()[0];
    return set_output(n, b_.constant(name_of(n), std::move(out)));
  }
  if (scale->size() != 1 || zero_points.size() != 1)
    fail(describe(n) + ": a per-axis dequantization of an activation is not supported");
  const NodeId q = activation(n.input(0), describe(n));
  const DataType stored = b_.graph().node(q).type.dtype;
  ops::QuantizeAttrs a{scale->data()[0], zero_points[0], stored == DataType::kInt8 ? "int8" : "uint8"};
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const std::string given = quantized_dtype(value(n.input(2), describe(n)).element_type);
    if (!given.empty()) a.dtype = given;
  }
  set_output(n, b_.add_node(Op::named("dequantize"), name_of(n), {q}, a));
}

NodeId Importer::quantized_dense_weight(const onnx::NodeProto& n, int input, bool b_is_nk) {
  const Value& v = value(n.input(input), describe(n));
  if (v.node < 0) return -1;
  const Node& dq = b_.graph().node(v.node);
  if (dq.op != Op::named("dequantize_per_channel") || dq.type.shape.size() != 2 ||
      dq.attrs_as<ops::DequantizePerChannelAttrs>().axis != (b_is_nk ? 0 : 1))
    return -1;
  const Node& q = b_.graph().node(dq.inputs[0]);
  if (q.op != Op::kConstant || q.type.dtype != DataType::kInt8) return -1;
  const Shape& s = q.type.shape;
  runtime::NDArray nk(b_is_nk ? s : Shape{s[1], s[0]});
  for (int64_t r = 0; r < s[0]; ++r)
    for (int64_t c = 0; c < s[1]; ++c) nk[b_is_nk ? r * s[1] + c : c * s[0] + r] = (*q.value)[r * s[1] + c];
  const std::string name = clean(n.input(input)) + ".weight";
  return b_.add_node(Op::named("dequantize_per_channel"), name,
                     {b_.constant(name + ".int8", std::move(nk), DataType::kInt8), dq.inputs[1], dq.inputs[2]},
                     ops::DequantizePerChannelAttrs{0});
}

// ---- the QOperator format and dynamic quantization -------------------------
//
// onnxruntime's QOperator format (quantize_static with QuantFormat.QOperator)
// writes each quantized operator as one node of integers in and out; each is
// imported as the float operator between the QuantizeLinear /
// DequantizeLinear pairs it stands for, as ONNX nodes converted here like
// the file's own, so that fuse_quantized_operators gives the patterns with
// int8 kernels to those kernels and the rest computes what the operator's
// definition says. quantize_dynamic's ConvInteger and MatMulInteger (integer
// products of values less their zero points, int32) become the float
// operator on the differences, exact while the sums stay within float's 24
// bits; DynamicQuantizeLinear computes its scale from the tensor's range at
// run time.

namespace {

// A node converted in place of `from`: `op` on `inputs`, writing `outputs`,
// with `from`'s attributes when asked (the float operator's are the same).
onnx::NodeProto node_for(const onnx::NodeProto& from, const std::string& op, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, bool with_attributes) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name((from.name().empty() ? from.output(0) : from.name()) + "/" + op);
  for (const std::string& in : inputs) n.add_input(in);
  for (const std::string& out : outputs) n.add_output(out);
  if (with_attributes) *n.mutable_attribute() = from.attribute();
  return n;
}

// Input i of n, or "" (an optional input left out: a zero point of 0).
std::string input_or_none(const onnx::NodeProto& n, int i) { return i < n.input_size() ? n.input(i) : ""; }

}  // namespace

std::string Importer::synthetic(const onnx::NodeProto& n, const std::string& what) const {
  return n.output(0) + "/" + what;
}

std::string Importer::dequantize_input(const onnx::NodeProto& n, int q, int axis) {
  const std::string out = synthetic(n, "dequantized_" + std::to_string(q));
  onnx::NodeProto dq =
      node_for(n, "DequantizeLinear", {n.input(q), n.input(q + 1), input_or_none(n, q + 2)}, {out}, false);
  auto* a = dq.add_attribute();
  a->set_name("axis"), a->set_type(onnx::AttributeProto::INT), a->set_i(axis);
  convert_dequantize_linear(dq);
  return out;
}

std::string Importer::dequantize_bias(const onnx::NodeProto& n, int bias, int x_scale, int w_scale) {
  // An int32 bias in units of x_scale * w_scale[c], as the operator defines it.
  const runtime::NDArray* xs = constant_of(n, x_scale);
  const runtime::NDArray* ws = constant_of(n, w_scale);
  if (!xs || xs->size() != 1 || !ws) fail(describe(n) + ": the scales of its input and weight must be constants");
  const Value& b = value(n.input(bias), describe(n));
  if (!b.ints || b.ints_shape.size() != 1) fail(describe(n) + ": the bias must be a constant vector of int32");
  const int64_t channels = b.ints_shape[0];
  if (ws->size() != 1 && ws->size() != channels)
    fail(describe(n) + ": the weight has " + std::to_string(ws->size()) + " scales for " + std::to_string(channels) +
         " output channels");
  runtime::NDArray scale({channels});
  for (int64_t c = 0; c < channels; ++c) scale[c] = (*xs)[0] * (*ws)[ws->size() == 1 ? 0 : c];
  const std::string scale_name = synthetic(n, "bias_scale"), out = synthetic(n, "bias");
  values_[scale_name] = Value{b_.constant(clean(scale_name), std::move(scale)), std::nullopt, {}};
  onnx::NodeProto dq = node_for(n, "DequantizeLinear", {n.input(bias), scale_name}, {out}, false);
  convert_dequantize_linear(dq);
  return out;
}

void Importer::quantize_output(const onnx::NodeProto& n, const std::string& value_name, int scale) {
  onnx::NodeProto q =
      node_for(n, "QuantizeLinear", {value_name, n.input(scale), input_or_none(n, scale + 1)}, {n.output(0)}, false);
  convert_quantize_linear(q);
}

void Importer::convert_qlinear_conv(const onnx::NodeProto& n) {
  // x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, [B]
  require_inputs(n, 8);
  std::vector<std::string> inputs{dequantize_input(n, 0, 1), dequantize_input(n, 3, 0)};
  if (n.input_size() > 8 && !n.input(8).empty()) inputs.push_back(dequantize_bias(n, 8, 1, 4));
  const std::string y = synthetic(n, "float");
  convert_op(node_for(n, "Conv", inputs, {y}, true));
  quantize_output(n, y, 6);
}

void Importer::convert_qlinear_matmul(const onnx::NodeProto& n) {
  // a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point;
  // b's scales per column (its last axis) or one.
  require_inputs(n, 8);
  const Value& b = value(n.input(3), describe(n));
  const int64_t b_rank = b.ints ? static_cast<int64_t>(b.ints_shape.size()) : 2;
  const std::string y = synthetic(n, "float");
  convert_op(node_for(n, "MatMul", {dequantize_input(n, 0, 1), dequantize_input(n, 3, b_rank - 1)}, {y}, false));
  quantize_output(n, y, 6);
}

void Importer::convert_qgemm(const onnx::NodeProto& n) {
  // com.microsoft QGemm: A, a_scale, a_zp, B, b_scale, b_zp, [C int32], [y_scale, y_zp]
  // (without y_scale the output is float).
  require_inputs(n, 6);
  const bool trans_b = attr_int(n, "transB", 0) != 0;
  std::vector<std::string> inputs{dequantize_input(n, 0, 1), dequantize_input(n, 3, trans_b ? 0 : 1)};
  if (n.input_size() > 6 && !n.input(6).empty()) inputs.push_back(dequantize_bias(n, 6, 1, 4));
  const bool quantized = n.input_size() > 7 && !n.input(7).empty();
  const std::string y = quantized ? synthetic(n, "float") : n.output(0);
  onnx::NodeProto gemm = node_for(n, "Gemm", inputs, {y}, true);
  convert_op(gemm);
  if (quantized) quantize_output(n, y, 7);
}

void Importer::convert_qlinear_elementwise(const onnx::NodeProto& n, const std::string& float_op, int operands) {
  // (x, x_scale, x_zero_point) per operand, then y_scale, y_zero_point.
  require_inputs(n, 3 * operands + 1);  // y's zero point may be left out (0)
  std::vector<std::string> inputs;
  for (int i = 0; i < operands; ++i) inputs.push_back(dequantize_input(n, 3 * i, 1));
  const std::string y = synthetic(n, "float");
  convert_op(node_for(n, float_op, inputs, {y}, true));
  quantize_output(n, y, 3 * operands);
}

void Importer::convert_qlinear_concat(const onnx::NodeProto& n) {
  // y_scale, y_zero_point, then (x, x_scale, x_zero_point) per operand.
  if (n.input_size() < 5 || (n.input_size() - 2) % 3 != 0)
    fail(describe(n) + ": expects y_scale, y_zero_point and triples of input, scale, zero point");
  std::vector<std::string> inputs;
  for (int i = 2; i < n.input_size(); i += 3) inputs.push_back(dequantize_input(n, i, 1));
  const std::string y = synthetic(n, "float");
  convert_op(node_for(n, "Concat", inputs, {y}, true));
  quantize_output(n, y, 0);
}

void Importer::convert_microsoft(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op == "QGemm") return convert_qgemm(n);
  if (op == "QLinearAdd") return convert_qlinear_elementwise(n, "Add", 2);
  if (op == "QLinearMul") return convert_qlinear_elementwise(n, "Mul", 2);
  if (op == "QLinearSigmoid") return convert_qlinear_elementwise(n, "Sigmoid", 1);
  if (op == "QLinearAveragePool") return convert_qlinear_elementwise(n, "AveragePool", 1);
  if (op == "QLinearConcat") return convert_qlinear_concat(n);
  if (op == "QLinearGlobalAveragePool") {
    if (attr_int(n, "channels_last", 0) != 0) fail(describe(n) + ": channels_last=1 is not supported");
    return convert_qlinear_elementwise(n, "GlobalAveragePool", 1);
  }
  fail(describe(n) +
       ": operators of domain \"com.microsoft\" other than QGemm, QLinearAdd, QLinearMul, "
       "QLinearSigmoid, QLinearAveragePool, QLinearGlobalAveragePool and QLinearConcat are not supported");
}

std::string Importer::less_zero_point(const onnx::NodeProto& n, int x, int zero_point, int axis) {
  const bool has_zero_point = n.input_size() > zero_point && !n.input(zero_point).empty();
  const Value& v = value(n.input(x), describe(n));
  const std::string out = synthetic(n, "centred_" + std::to_string(x));
  if (v.ints) {
    // A constant (a weight): its integers less the zero points along `axis`
    // (a DequantizeLinear of scale 1), folded later.
    const std::string one = synthetic(n, "one");
    runtime::NDArray value({1});
    value[0] = 1.0f;
    values_[one] = Value{b_.constant(clean(one), std::move(value)), std::nullopt, {}};
    onnx::NodeProto dq = node_for(n, "DequantizeLinear", {n.input(x), one}, {out}, false);
    if (has_zero_point) dq.add_input(n.input(zero_point));
    auto* a = dq.add_attribute();
    a->set_name("axis"), a->set_type(onnx::AttributeProto::INT), a->set_i(axis);
    convert_dequantize_linear(dq);
    return dq.output(0);
  }
  if (!has_zero_point) return n.input(x);
  // An activation (DynamicQuantizeLinear's): less its zero point, known at run time.
  set_output(node_for(n, "Sub", {}, {out}, false),
             b_.add_node(Op::named("subtract"), out,
                         {activation(n.input(x), describe(n)), activation(n.input(zero_point), describe(n))}));
  return out;
}

void Importer::convert_conv_integer(const onnx::NodeProto& n) {
  // x, w, [x_zero_point], [w_zero_point] -> int32 sums (as floats).
  require_inputs(n, 2);
  convert_op(node_for(n, "Conv", {less_zero_point(n, 0, 2, 1), less_zero_point(n, 1, 3, 0)}, {n.output(0)}, true));
}

void Importer::convert_matmul_integer(const onnx::NodeProto& n) {
  // a, b, [a_zero_point], [b_zero_point (per column of b)] -> int32 products (as floats).
  require_inputs(n, 2);
  const Value& b = value(n.input(1), describe(n));
  const int64_t b_rank = b.ints ? static_cast<int64_t>(b.ints_shape.size()) : 2;
  const std::string a_centred = less_zero_point(n, 0, 2, 0);
  convert_op(node_for(n, "MatMul", {a_centred, less_zero_point(n, 1, 3, b_rank - 1)}, {n.output(0)}, false));
}

void Importer::convert_dynamic_quantize_linear(const onnx::NodeProto& n) {
  // x -> y (uint8), y_scale, y_zero_point, from x's range stretched to hold 0:
  //   scale = (max(x, 0) - min(x, 0)) / 255, zero_point = saturate(round(-min(x, 0) / scale)),
  //   y = saturate(round(x / scale) + zero_point), saturating to [0, 255].
  require_inputs(n, 1);
  const NodeId x = activation(n.input(0), describe(n));
  const std::string base = clean(synthetic(n, ""));
  auto scalar_constant = [&](const std::string& name, float v) {
    runtime::NDArray c({1});
    c[0] = v;
    return b_.constant(base + name, std::move(c));
  };
  const NodeId zero = scalar_constant("zero", 0.0f);
  auto whole = [&](const char* op, const std::string& name) {
    return b_.reshape(b_.add_node(Op::named(op), base + name, {x}, ops::ReduceAttrs{{}, false}), {1},
                      base + name + ".1");
  };
  const NodeId lo = b_.add_node(Op::named("minimum"), base + "lo", {whole("reduce_min", "min"), zero});
  const NodeId hi = b_.add_node(Op::named("maximum"), base + "hi", {whole("reduce_max", "max"), zero});
  // A tensor of zeros has no range: its scale stays positive (all its values quantize to 0).
  const NodeId range = b_.add_node(Op::named("subtract"), base + "range", {hi, lo});
  NodeId scale = b_.add_node(Op::named("divide"), base + "scale_of_range", {range, scalar_constant("255", 255.0f)});
  scale = b_.add_node(Op::named("maximum"), base + "scale", {scale, scalar_constant("smallest", 1e-30f)});
  auto saturated_round = [&](NodeId v, const std::string& name) {
    return b_.clip(b_.add_node(Op::named("round"), base + name + ".round", {v}), 0.0f, 255.0f, base + name);
  };
  const NodeId minus_lo = b_.add_node(Op::named("subtract"), base + "minus_lo", {zero, lo});
  const NodeId zero_point =
      saturated_round(b_.add_node(Op::named("divide"), base + "zp_quotient", {minus_lo, scale}), "zero_point");
  const NodeId steps = b_.add_node(Op::named("round"), base + "y.round",
                                   {b_.add_node(Op::named("divide"), base + "y.quotient", {x, scale})});
  const NodeId y = b_.clip(b_.add(steps, zero_point, base + "y.shifted"), 0.0f, 255.0f, base + "y");
  set_output(n, y, 0);
  set_output(n, scale, 1);
  set_output(n, zero_point, 2);
}

}  // namespace tessera::graph::onnx_importer
