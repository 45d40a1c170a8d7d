#include "ops/elementwise.h"

#include <sstream>

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

namespace {

// Indices into `t` for output position v under broadcasting to an output of rank v.size().
std::vector<ir::Expr> broadcast_index(const ir::Tensor& t, const std::vector<ir::Var>& v) {
  const size_t offset = v.size() - t->shape.size();
  std::vector<ir::Expr> idx;
  for (size_t d = 0; d < t->shape.size(); ++d)
    idx.push_back(t->shape[d] == 1 && v.size() > 0 ? ir::Expr(int64_t{0}) : ir::Expr(v[offset + d]));
  return idx;
}

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
