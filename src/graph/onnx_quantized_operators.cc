// QuantizeLinear and DequantizeLinear as onnxruntime's quantize_static writes
// them (QDQ): an activation quantized per tensor (a constant scalar scale and
// zero point, whose type says int8 or uint8) becomes the quantize /
// dequantize operators (ops/quantize.h); a DequantizeLinear of constants
// (int8 weights per output channel along `axis`, int32 biases) becomes
// dequantize_per_channel of its integers. graph::fuse_quantized_operators
// then makes each pattern of float operators between pairs that has an int8
// kernel that kernel (qlinear_conv2d, qlinear_add, int8 max pooling); the
// rest runs as onnxruntime defines it, in float between the pairs.
#include "graph/onnx_importer.h"
#include "ops/quantize.h"

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
      fail(describe(n) + ": scale and zero point must hold one value or one per element of axis " + std::to_string(axis));
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
    return set_output(n, b_.add_node(Op::named("dequantize_per_channel"), name_of(n),
                                     {b_.constant(name, std::move(q), stored),
                                      b_.constant(name + ".scale", std::move(scales)),
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

}  // namespace tessera::graph::onnx_importer
