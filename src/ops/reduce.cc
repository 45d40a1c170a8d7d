// Reductions over any axes (ONNX ReduceSum, ReduceMean, ReduceMax,
// ReduceMin, ReduceL2; torch's sum, mean, amax, amin, norm): squeeze-and-
// excitation pools, the statistics of a layer norm written out, token means.
// NaN propagates through max and min, as in onnxruntime.
#include "ops/reduce.h"

#include <cmath>
#include <limits>
#include <set>

#include "ops/operator.h"

namespace tessera::ops {

std::string ReduceAttrs::to_string() const {
  std::string s = "axes=[";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + "] keepdims=" + (keepdims ? "1" : "0");
}

namespace {

enum class Reduction { kSum, kMean, kMax, kMin, kL2 };

// Which axes are reduced, checked: in range, none twice.
std::vector<bool> reduced_axes(const ReduceAttrs& a, size_t rank) {
  std::vector<bool> reduced(rank, a.axes.empty());
  for (int64_t axis : a.axes) {
    const auto d = static_cast<size_t>(normalize_axis(axis, static_cast<int64_t>(rank), "axes"));
    if (reduced[d] && !a.axes.empty()) shape_error("axis " + std::to_string(axis) + " is given twice");
    reduced[d] = true;
  }
  return reduced;
}

Shape reduced_shape(const Shape& x, const ReduceAttrs& a) {
  const std::vector<bool> reduced = reduced_axes(a, x.size());
  Shape out;
  for (size_t d = 0; d < x.size(); ++d)
    if (!reduced[d]) out.push_back(x[d]);
    else if (a.keepdims) out.push_back(1);
  return out;
}

float identity_of(Reduction r) {
  if (r == Reduction::kMax) return -std::numeric_limits<float>::infinity();
  if (r == Reduction::kMin) return std::numeric_limits<float>::infinity();
  return 0.0f;
}

void reference_reduce(Reduction r, const OperatorCall& call, const float* x, float* y) {
  const Shape& shape = call.input_shapes[0];
  const std::vector<bool> reduced = reduced_axes(call.attrs.as<ReduceAttrs>(), shape.size());
  const int64_t out_size = num_elements(call.output_shape);
  std::vector<double> acc(static_cast<size_t>(out_size), identity_of(r));
  int64_t count = 1;
  for (size_t d = 0; d < shape.size(); ++d) count *= reduced[d] ? shape[d] : 1;
  std::vector<int64_t> coord;
  for (int64_t i = 0; i < num_elements(shape); ++i) {
    unravel(i, shape, coord);
    int64_t out = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (!reduced[d]) out = out * shape[d] + coord[d];
    double& a = acc[static_cast<size_t>(out)];
    const double v = x[i];
    switch (r) {
      case Reduction::kSum:
      case Reduction::kMean: a += v; break;
      case Reduction::kL2: a += v * v; break;
      case Reduction::kMax: a = std::isnan(a) || std::isnan(v) ? NAN : std::max(a, v); break;
      case Reduction::kMin: a = std::isnan(a) || std::isnan(v) ? NAN : std::min(a, v); break;
    }
  }
  for (int64_t i = 0; i < out_size; ++i) {
    const double a = acc[static_cast<size_t>(i)];
    y[i] = static_cast<float>(r == Reduction::kMean ? a / static_cast<double>(count) : r == Reduction::kL2 ? std::sqrt(a) : a);
  }
}

// The reduction over the output's coordinates; mean, l2, max and min finish
// in a second, elementwise stage (max and min after a count of NaNs).
ir::Tensor compute_reduce(Reduction r, const std::string& name, const ir::Tensor& x, const ReduceAttrs& a) {
  const Shape& shape = x->shape;
  const std::vector<bool> reduced = reduced_axes(a, shape.size());
  const Shape out_shape = reduced_shape(shape, a);
  std::vector<ir::IterVar> k;
  int64_t count = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) k.push_back(ir::reduce_axis(shape[d], "k" + std::to_string(d))), count *= shape[d];
  auto index = [&](const std::vector<ir::Var>& v) {
    std::vector<ir::Expr> idx;
    size_t o = 0, kk = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (reduced[d]) {
        idx.push_back(k[kk++].var);
        if (a.keepdims) ++o;
      } else {
        idx.push_back(v[o++]);
      }
    }
    return idx;
  };
  auto body = [&](const std::vector<ir::Var>& v) {
    const ir::Expr value = ir::load(x, index(v));
    switch (r) {
      case Reduction::kMax: return ir::reduce_max(value, k);
      case Reduction::kMin: return ir::reduce_min(value, k);
      case Reduction::kL2: return ir::sum(value * value, k);
      default: return ir::sum(value, k);
    }
  };
  ir::Tensor acc = ir::compute(out_shape, body, unique_name("T_" + name + "_acc", {x}), "reduce",
                               ax_names(out_shape.size()));
  if (r == Reduction::kSum) return acc;
  // max and min compare, and a comparison with NaN drops it: a second sum
  // counts the NaNs, and a row with one is NaN.
  const bool compares = r == Reduction::kMax || r == Reduction::kMin;
  ir::Tensor nans;
  if (compares) {
    std::vector<ir::IterVar> k2;
    for (size_t i = 0; i < k.size(); ++i) k2.push_back(ir::reduce_axis(k[i].extent, "n" + std::to_string(i)));
    std::swap(k, k2);  // index() reads k: the count gets reduction axes of its own
    nans = ir::compute(
        out_shape,
        [&](const std::vector<ir::Var>& v) {
          const ir::Expr value = ir::load(x, index(v));
          return ir::sum(ir::select(value != value, ir::make_float(1.0), ir::make_float(0.0)), k);
        },
        unique_name("T_" + name + "_nans", {x}), "reduce", ax_names(out_shape.size()));
  }
  auto finish = [&](const std::vector<ir::Var>& v) {
    const ir::Expr s = ir::load(acc, to_exprs(v));
    if (r == Reduction::kMean) return s * ir::make_float(1.0 / static_cast<double>(count));
    if (r == Reduction::kL2) return ir::call("sqrt", {s});
    return ir::select(ir::load(nans, to_exprs(v)) > ir::make_float(0.0), ir::make_float(NAN), s);
  };
  return ir::compute(out_shape, finish, unique_name("T_" + name, compares ? std::vector<ir::Tensor>{acc, nans}
                                                                         : std::vector<ir::Tensor>{acc}),
                     "reduce", ax_names(out_shape.size()));
}

Operator reduce_operator(const std::string& name, Reduction r) {
  Operator op;
  op.name = name;
  op.default_attrs = ReduceAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    return reduced_shape(in[0], attrs.as<ReduceAttrs>());
  };
  op.reference = [r](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    reference_reduce(r, call, in[0], y);
  };
  op.compute = [r, name](const OperatorCall& call, const std::vector<ir::Tensor>& in) {
    return compute_reduce(r, name, in[0], call.attrs.as<ReduceAttrs>());
  };
  return op;
}

}  // namespace
}  // namespace tessera::ops

TESSERA_OPERATOR(reduce_sum) { return tessera::ops::reduce_operator("reduce_sum", tessera::ops::Reduction::kSum); }
TESSERA_OPERATOR(reduce_mean) { return tessera::ops::reduce_operator("reduce_mean", tessera::ops::Reduction::kMean); }
TESSERA_OPERATOR(reduce_max) { return tessera::ops::reduce_operator("reduce_max", tessera::ops::Reduction::kMax); }
TESSERA_OPERATOR(reduce_min) { return tessera::ops::reduce_operator("reduce_min", tessera::ops::Reduction::kMin); }
TESSERA_OPERATOR(reduce_l2) { return tessera::ops::reduce_operator("reduce_l2", tessera::ops::Reduction::kL2); }
