// layer_norm (transformers, ConvNeXt; ONNX LayerNormalization, torch's
// F.layer_norm): each row of the trailing axes from `axis` on is normalised
// by its own mean and variance, then scaled and shifted elementwise:
//   y = (x - mean) / sqrt(var + epsilon) * scale + bias
// Inputs: data, scale, bias, the last two shaped like the trailing axes.
#include "ops/layer_norm.h"

#include <cmath>

#include "ops/operator.h"

namespace tessera::ops {
namespace {

// Rows (the leading axes) and their length (the trailing ones).
struct Rows {
  size_t axis;
  Shape outer, inner;
  int64_t length = 1;
};

Rows rows_of(const Shape& x, int64_t axis) {
  Rows r;
  r.axis = static_cast<size_t>(normalize_axis(axis, static_cast<int64_t>(x.size()), "axis"));
  r.outer.assign(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(r.axis));
  r.inner.assign(x.begin() + static_cast<std::ptrdiff_t>(r.axis), x.end());
  for (int64_t d : r.inner) r.length *= d;
  return r;
}

void reference_layer_norm(const OperatorCall& call, const std::vector<const float*>& in, float* y) {
  const auto& a = call.attrs.as<LayerNormAttrs>();
  const Rows r = rows_of(call.input_shapes[0], a.axis);
  const int64_t rows = num_elements(r.outer);
  for (int64_t row = 0; row < rows; ++row) {
    const float* x = in[0] + row * r.length;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < r.length; ++i) mean += x[i];
    mean /= static_cast<double>(r.length);
    for (int64_t i = 0; i < r.length; ++i) var += (x[i] - mean) * (x[i] - mean);
    var /= static_cast<double>(r.length);
    const double inv = 1.0 / std::sqrt(var + a.epsilon);
    for (int64_t i = 0; i < r.length; ++i)
      y[row * r.length + i] = static_cast<float>((x[i] - mean) * inv * in[1][i] + in[2][i]);
  }
}

// Four stages, one kernel: the row sums, the centred squares' sums, each
// row's 1 / sqrt(var + epsilon), and the output.
ir::Tensor layer_norm(const ir::Tensor& x, const ir::Tensor& scale, const ir::Tensor& bias, const LayerNormAttrs& a) {
  const Rows r = rows_of(x->shape, a.axis);
  const size_t outer = r.axis;
  const ir::Expr inv_length = ir::make_float(1.0 / static_cast<double>(r.length));
  auto row_axes = [&](const std::string& prefix) {
    std::vector<ir::IterVar> axes;
    for (size_t d = 0; d < r.inner.size(); ++d) axes.push_back(ir::reduce_axis(r.inner[d], prefix + std::to_string(d)));
    return axes;
  };
  auto element = [&](const std::vector<ir::Var>& row, const std::vector<ir::IterVar>& along) {
    std::vector<ir::Expr> idx = to_exprs(row);
    for (const auto& k : along) idx.push_back(k.var);
    return idx;
  };
  const std::vector<ir::IterVar> k1 = row_axes("k");
  ir::Tensor sum = ir::compute(
      r.outer, [&](const std::vector<ir::Var>& v) { return ir::sum(ir::load(x, element(v, k1)), k1); },
      unique_name("T_layer_norm_sum", {x}), "layer_norm", ax_names(outer));
  const std::vector<ir::IterVar> k2 = row_axes("k");
  ir::Tensor squares = ir::compute(
      r.outer,
      [&](const std::vector<ir::Var>& v) {
        const ir::Expr centred = ir::load(x, element(v, k2)) - ir::load(sum, to_exprs(v)) * inv_length;
        return ir::sum(centred * centred, k2);
      },
      unique_name("T_layer_norm_squares", {sum}), "layer_norm", ax_names(outer));
  ir::Tensor inv_std = ir::compute(
      r.outer,
      [&](const std::vector<ir::Var>& v) {
        const ir::Expr var = ir::load(squares, to_exprs(v)) * inv_length + ir::make_float(a.epsilon);
        return ir::make_float(1.0) / ir::call("sqrt", {var});
      },
      unique_name("T_layer_norm_inv_std", {squares}), "layer_norm", ax_names(outer));
  return ir::compute(
      x->shape,
      [&](const std::vector<ir::Var>& v) {
        const std::vector<ir::Var> row(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(outer));
        const std::vector<ir::Var> col(v.begin() + static_cast<std::ptrdiff_t>(outer), v.end());
        const ir::Expr mean = ir::load(sum, to_exprs(row)) * inv_length;
        return (ir::load(x, to_exprs(v)) - mean) * ir::load(inv_std, to_exprs(row)) * ir::load(scale, to_exprs(col)) +
               ir::load(bias, to_exprs(col));
      },
      unique_name("T_layer_norm", {inv_std, scale, bias}), "layer_norm", ax_names(x->shape.size()));
}

}  // namespace
}  // namespace tessera::ops

TESSERA_OPERATOR(layer_norm) {
  using namespace tessera::ops;
  Operator op;
  op.name = "layer_norm";  // inputs: data, scale, bias
  op.num_inputs = 3;
  op.default_attrs = LayerNormAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    const auto& a = attrs.as<LayerNormAttrs>();
    if (!(a.epsilon >= 0)) shape_error("epsilon must be non-negative");
    const Rows r = rows_of(in[0], a.axis);
    const char* names[] = {"scale", "bias"};
    for (int i = 0; i < 2; ++i)
      if (in[i + 1] != r.inner)
        shape_error(std::string(names[i]) + " " + shape_to_string(in[i + 1]) + " does not match the normalised axes " +
                    shape_to_string(r.inner) + " (from axis " + std::to_string(r.axis) + ") of data " +
                    shape_to_string(in[0]));
    return in[0];
  };
  op.reference = reference_layer_norm;
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    return layer_norm(in[0], in[1], in[2], call.attrs.as<LayerNormAttrs>());
  };
  return op;
}
