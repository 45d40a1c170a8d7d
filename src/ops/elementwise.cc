#include "ops/elementwise.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "ops/operator.h"
#include "ops/reference.h"
#include "ops/transform.h"

namespace tessera::ops {

Shape broadcast_shape(const std::string& op, const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Dimension i counted from the last axis; missing leading dimensions are 1.
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      fail(op, "shapes " + shape_to_string(a) + " and " + shape_to_string(b) + " do not broadcast (axis " +
                   std::to_string(rank - 1 - i) + ": " + std::to_string(da) + " vs " + std::to_string(db) + ")");
    out[rank - 1 - i] = std::max(da, db);
  }
  return out;
}

std::vector<ir::Expr> broadcast_index(const ir::Tensor& t, const std::vector<ir::Var>& v) {
  const size_t offset = v.size() - t->shape.size();
  std::vector<ir::Expr> idx;
  for (size_t d = 0; d < t->shape.size(); ++d)
    idx.push_back(t->shape[d] == 1 && v.size() > 0 ? ir::Expr(int64_t{0}) : ir::Expr(v[offset + d]));
  return idx;
}

namespace {

ir::Tensor binary_op(const std::string& op, const std::string& name, const ir::Tensor& a, const ir::Tensor& b,
                     ir::Expr (*combine)(ir::Expr, ir::Expr)) {
  Shape out = broadcast_shape(op, a->shape, b->shape);
  const bool same = a->shape == b->shape;
  auto body = [&](const std::vector<ir::Var>& v) {
    return combine(ir::load(a, broadcast_index(a, v)), ir::load(b, broadcast_index(b, v)));
  };
  return ir::compute(out, body, unique_name(name, {a, b}), same ? "elemwise" : "broadcast", ax_names(out.size()));
}

}  // namespace

ir::Tensor bias_add(const ir::Tensor& data, const ir::Tensor& bias, const std::vector<size_t>& axes) {
  const Shape& ds = data->shape;
  if (bias->shape.size() != axes.size())
    fail("bias_add", "bias must have one dimension per bias axis (" + std::to_string(axes.size()) + "), got " +
                         shape_to_string(bias->shape));
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] >= ds.size())
      fail("bias_add", "axis " + std::to_string(axes[i]) + " is out of range for data " + shape_to_string(ds));
    if (bias->shape[i] != ds[axes[i]])
      fail("bias_add", "bias " + shape_to_string(bias->shape) + " does not match data " + shape_to_string(ds) +
                           " along axis " + std::to_string(axes[i]));
  }
  auto body = [&](const std::vector<ir::Var>& v) {
    std::vector<ir::Expr> bias_idx;
    for (size_t axis : axes) bias_idx.push_back(v[axis]);
    return ir::load(data, to_exprs(v)) + ir::load(bias, bias_idx);
  };
  return ir::compute(ds, body, unique_name("T_add", {data, bias}), "broadcast", ax_names(ds.size()));
}

ir::Tensor bias_add(const ir::Tensor& data, const ir::Tensor& bias, size_t axis) {
  return bias_add(data, bias, std::vector<size_t>{axis});
}

ir::Tensor add(const ir::Tensor& a, const ir::Tensor& b) {
  return binary_op("add", "T_add", a, b, [](ir::Expr x, ir::Expr y) { return x + y; });
}

ir::Tensor multiply(const ir::Tensor& a, const ir::Tensor& b) {
  return binary_op("multiply", "T_multiply", a, b, [](ir::Expr x, ir::Expr y) { return x * y; });
}

ir::Tensor relu(const ir::Tensor& x) {
  // x < 0 ? 0 : x, not max(x, 0): a NaN fails the comparison and stays NaN,
  // as in onnxruntime and PyTorch (x86's maxps(0, x) is this select).
  auto body = [&](const std::vector<ir::Var>& v) {
    ir::Expr value = ir::load(x, to_exprs(v));
    return ir::select(value < ir::Expr(0.0f), ir::Expr(0.0f), value);
  };
  return ir::compute(x->shape, body, unique_name("T_relu", {x}), "elemwise", ax_names(x->shape.size()));
}

ir::Tensor clip(const ir::Tensor& x, float lo, float hi) {
  if (!(lo <= hi)) {
    std::ostringstream msg;
    msg << "a_min must not exceed a_max, got a_min=" << lo << ", a_max=" << hi;
    fail("clip", msg.str());
  }
  auto body = [&](const std::vector<ir::Var>& v) {  // NaN stays NaN, as with relu
    ir::Expr value = ir::load(x, to_exprs(v));
    return ir::select(value < ir::Expr(lo), ir::Expr(lo), ir::select(value > ir::Expr(hi), ir::Expr(hi), value));
  };
  return ir::compute(x->shape, body, unique_name("T_clip", {x}), "elemwise", ax_names(x->shape.size()));
}

}  // namespace tessera::ops

namespace tessera::ops {

std::string ClipAttrs::to_string() const { return "min=" + number_to_string(min) + " max=" + number_to_string(max); }

// ---------------------------------------------------------------------------
// The operators: binaries of two tensors with NumPy broadcasting (add and
// multiply; subtract, divide, maximum, minimum and power for squeeze-
// excitation scales, attention masks, the pieces of a layer norm older
// exporters emit), bias_add, relu, clip and sigmoid. NaN propagates through
// maximum and minimum, as in onnxruntime and PyTorch.

namespace {

float maximum_of(float x, float y) { return x != x || y != y ? x + y : std::max(x, y); }
float minimum_of(float x, float y) { return x != x || y != y ? x + y : std::min(x, y); }

ir::Expr nan_or(ir::Expr x, ir::Expr y, ir::Expr value) {
  return ir::select(x != x, x, ir::select(y != y, y, value));
}

}  // namespace

Operator binary_operator(const std::string& name, float (*scalar)(float, float),
                         ir::Expr (*expression)(ir::Expr, ir::Expr)) {
  Operator op;
  op.name = name;
  op.num_inputs = 2;
  op.pattern = FusionPattern::kElementwise;
  op.infer_shape = [name](const std::vector<Shape>& in, const Attrs&) { return broadcast_shape(name, in[0], in[1]); };
  op.reference = [name, scalar](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    reference::broadcast_binary(in[0], call.input_shapes[0], in[1], call.input_shapes[1], y, scalar, name);
  };
  op.compute = [name, expression](const OperatorCall&, const std::vector<ir::Tensor>& in) {
    return binary_op(name, "T_" + name, in[0], in[1], expression);
  };
  return op;
}

}  // namespace tessera::ops

TESSERA_OPERATOR(add) {
  using namespace tessera::ops;
  using tessera::ir::Expr;
  return binary_operator(
      "add", [](float x, float y) { return x + y; }, [](Expr x, Expr y) { return x + y; });
}

TESSERA_OPERATOR(multiply) {
  using namespace tessera::ops;
  using tessera::ir::Expr;
  return binary_operator(
      "multiply", [](float x, float y) { return x * y; }, [](Expr x, Expr y) { return x * y; });
}

TESSERA_OPERATOR(subtract) {
  using namespace tessera::ops;
  using tessera::ir::Expr;
  return binary_operator(
      "subtract", [](float x, float y) { return x - y; }, [](Expr x, Expr y) { return x - y; });
}

TESSERA_OPERATOR(divide) {
  using namespace tessera::ops;
  using tessera::ir::Expr;
  return binary_operator(
      "divide", [](float x, float y) { return x / y; }, [](Expr x, Expr y) { return x / y; });
}

TESSERA_OPERATOR(maximum) {
  using namespace tessera::ops;
  using tessera::ir::Expr;
  return binary_operator("maximum", maximum_of, [](Expr x, Expr y) { return nan_or(x, y, tessera::ir::max(x, y)); });
}

TESSERA_OPERATOR(minimum) {
  using namespace tessera::ops;
  using tessera::ir::Expr;
  return binary_operator("minimum", minimum_of, [](Expr x, Expr y) { return nan_or(x, y, tessera::ir::min(x, y)); });
}

TESSERA_OPERATOR(power) {
  using namespace tessera::ops;
  using tessera::ir::Expr;
  return binary_operator(
      "power", [](float x, float y) { return static_cast<float>(std::pow(double{x}, double{y})); },
      [](Expr x, Expr y) { return tessera::ir::call("pow", {x, y}); });
}

TESSERA_OPERATOR(bias_add) {
  using namespace tessera::ops;
  Operator op;
  op.name = "bias_add";
  op.num_inputs = 2;
  op.pattern = FusionPattern::kElementwise;
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    const int64_t axis = normalize_axis(attrs.as<BiasAddAttrs>().axis, in[0].size(), "axis");
    if (in[1] != Shape{in[0][axis]})
      shape_error("bias " + shape_to_string(in[1]) + " does not match axis " + std::to_string(axis) + " of data " +
                  shape_to_string(in[0]));
    return in[0];
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const Shape& x = call.input_shapes[0];
    const auto axis = static_cast<size_t>(normalize_axis(call.attrs.as<BiasAddAttrs>().axis, x.size(), "axis"));
    reference::bias_add(in[0], x, in[1], {axis}, y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    const Shape& x = call.input_shapes[0];
    return bias_add(in[0], in[1],
                    static_cast<size_t>(normalize_axis(call.attrs.as<BiasAddAttrs>().axis, x.size(), "axis")));
  };
  return op;
}

TESSERA_OPERATOR(relu) {
  using namespace tessera::ops;
  Operator op = unary_elementwise_operator("relu");
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    reference::relu(in[0], num_elements(call.output_shape), y);
  };
  op.compute = [](const OperatorCall&, const std::vector<tessera::ir::Tensor>& in) { return relu(in[0]); };
  return op;
}

TESSERA_OPERATOR(clip) {
  using namespace tessera::ops;
  Operator op = unary_elementwise_operator("clip");
  op.default_attrs = ClipAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    const auto& a = attrs.as<ClipAttrs>();
    if (!(a.min <= a.max)) shape_error("min " + std::to_string(a.min) + " is above max " + std::to_string(a.max));
    return in[0];
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const auto& a = call.attrs.as<ClipAttrs>();
    reference::clip(in[0], num_elements(call.output_shape), a.min, a.max, y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    const auto& a = call.attrs.as<ClipAttrs>();
    return clip(in[0], a.min, a.max);
  };
  return op;
}

TESSERA_OPERATOR(sigmoid) {
  using namespace tessera::ops;
  Operator op = unary_elementwise_operator("sigmoid");
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    reference::sigmoid(in[0], num_elements(call.output_shape), y);
  };
  op.compute = [](const OperatorCall&, const std::vector<tessera::ir::Tensor>& in) { return sigmoid(in[0]); };
  return op;
}
