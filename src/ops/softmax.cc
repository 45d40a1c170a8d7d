#include "ops/softmax.h"

#include "ops/operator.h"
#include "ops/reference.h"
#include "tessera/error.h"

namespace tessera::ops {

namespace {
std::vector<std::string> i_names(size_t rank) {
  std::vector<std::string> names;
  for (size_t i = 0; i < rank; ++i) names.push_back("i" + std::to_string(i));
  return names;
}

// v[0..n-1] followed by `last`.
std::vector<ir::Expr> with_last(const std::vector<ir::Var>& v, size_t n, const ir::Expr& last) {
  std::vector<ir::Expr> idx(v.begin(), v.begin() + n);
  idx.push_back(last);
  return idx;
}
}  // namespace

ir::Tensor softmax(const ir::Tensor& data) {
  const Shape& shape = data->shape;
  if (shape.size() < 2) fail("softmax", "data must have rank >= 2, got " + shape_to_string(shape));
  const size_t rank = shape.size(), outer = rank - 1;
  const Shape row_shape(shape.begin(), shape.end() - 1);
  const std::map<std::string, std::string> attrs = {{"axis", std::to_string(outer)}};

  ir::IterVar k = ir::reduce_axis(shape.back(), "k");
  ir::Tensor maxelem = ir::compute(
      row_shape,
      [&](const std::vector<ir::Var>& v) { return ir::reduce_max(ir::load(data, with_last(v, outer, k.var)), {k}); },
      unique_name("T_softmax_maxelem", {data}), "softmax", i_names(outer), attrs);

  ir::Tensor exp = ir::compute(
      shape,
      [&](const std::vector<ir::Var>& v) {
        std::vector<ir::Expr> row(v.begin(), v.begin() + outer);
        return ir::exp(ir::load(data, to_exprs(v)) - ir::load(maxelem, row));
      },
      unique_name("T_softmax_exp", {maxelem}), "softmax", i_names(rank), attrs);

  ir::IterVar k2 = ir::reduce_axis(shape.back(), "k");
  ir::Tensor expsum = ir::compute(
      row_shape,
      [&](const std::vector<ir::Var>& v) { return ir::sum(ir::load(exp, with_last(v, outer, k2.var)), {k2}); },
      unique_name("T_softmax_expsum", {exp}), "softmax", i_names(outer), attrs);

  return ir::compute(
      shape,
      [&](const std::vector<ir::Var>& v) {
        std::vector<ir::Expr> row(v.begin(), v.begin() + outer);
        return ir::load(exp, to_exprs(v)) / ir::load(expsum, row);
      },
      unique_name("T_softmax_norm", {expsum}), "softmax", i_names(rank), attrs);
}

}  // namespace tessera::ops

TESSERA_OPERATOR(softmax) {
  using namespace tessera::ops;
  Operator op;
  op.name = "softmax";
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    normalize_axis(attrs.as<SoftmaxAttrs>().axis, in[0].size(), "axis");
    return in[0];
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const Shape& x = call.input_shapes[0];
    reference::softmax(in[0], x, static_cast<size_t>(normalize_axis(call.attrs.as<SoftmaxAttrs>().axis, x.size(), "axis")), y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    const int64_t rank = static_cast<int64_t>(call.input_shapes[0].size());
    if (normalize_axis(call.attrs.as<SoftmaxAttrs>().axis, rank, "axis") != rank - 1)
      throw tessera::Error("softmax over a non-last axis is not supported by the build yet");
    return softmax(in[0]);
  };
  return op;
}
