// strided_slice (ONNX Slice, Split, Gather of one index; x[a:b:s] in
// PyTorch) and broadcast_to (ONNX Expand). Both copy: strided_slice reads a
// box of its input, broadcast_to repeats it; compile gives each a kernel.
#include "ops/slice.h"

#include "ops/elementwise.h"
#include "ops/operator.h"

namespace tessera::ops {

std::string StridedSliceAttrs::to_string() const {
  return "begin=" + shape_to_string(begin) + " end=" + shape_to_string(end) + " step=" + shape_to_string(step);
}

namespace {

Shape sliced_shape(const Shape& x, const StridedSliceAttrs& a) {
  if (a.begin.size() != x.size() || a.end.size() != x.size() || a.step.size() != x.size())
    shape_error("begin, end and step need one entry per axis of data " + shape_to_string(x));
  Shape out(x.size());
  for (size_t d = 0; d < x.size(); ++d) {
    const int64_t b = a.begin[d], e = a.end[d], s = a.step[d];
    if (s == 0) shape_error("axis " + std::to_string(d) + " has step 0");
    if (b < 0 || b >= x[d]) shape_error("axis " + std::to_string(d) + " begins at " + std::to_string(b) + ", outside 0.." + std::to_string(x[d] - 1));
    if (e < -1 || e > x[d]) shape_error("axis " + std::to_string(d) + " ends at " + std::to_string(e) + ", outside -1.." + std::to_string(x[d]));
    out[d] = s > 0 ? (e - b + s - 1) / s : (b - e + (-s) - 1) / (-s);
    if (out[d] <= 0) shape_error("axis " + std::to_string(d) + " selects nothing (" + std::to_string(b) + ":" + std::to_string(e) + ":" + std::to_string(s) + ")");
  }
  return out;
}

// y[i] = value(the coordinates of element i of `out`), for every i.
template <class Value>
void for_each_element(const Shape& out, Value value, float* y) {
  std::vector<int64_t> coord;
  const int64_t n = num_elements(out);
  for (int64_t i = 0; i < n; ++i) {
    unravel(i, out, coord);
    y[i] = value(coord);
  }
}

}  // namespace
}  // namespace tessera::ops

TESSERA_OPERATOR(strided_slice) {
  using namespace tessera::ops;
  Operator op;
  op.name = "strided_slice";
  op.default_attrs = StridedSliceAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    return sliced_shape(in[0], attrs.as<StridedSliceAttrs>());
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const auto& a = call.attrs.as<StridedSliceAttrs>();
    const Shape& x = call.input_shapes[0];
    for_each_element(call.output_shape, [&](const std::vector<int64_t>& c) {
      int64_t offset = 0;
      for (size_t d = 0; d < x.size(); ++d) offset = offset * x[d] + a.begin[d] + c[d] * a.step[d];
      return in[0][offset];
    }, y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    const auto& a = call.attrs.as<StridedSliceAttrs>();
    const tessera::ir::Tensor& x = in[0];
    auto body = [&](const std::vector<tessera::ir::Var>& v) {
      std::vector<tessera::ir::Expr> index;
      for (size_t d = 0; d < v.size(); ++d)
        index.push_back(tessera::ir::make_int(a.begin[d]) + tessera::ir::Expr(v[d]) * tessera::ir::make_int(a.step[d]));
      return tessera::ir::load(x, index);
    };
    return tessera::ir::compute(call.output_shape, body, unique_name("T_strided_slice", {x}), "injective",
                                ax_names(call.output_shape.size()));
  };
  return op;
}

TESSERA_OPERATOR(broadcast_to) {
  using namespace tessera::ops;
  Operator op;
  op.name = "broadcast_to";
  op.pattern = FusionPattern::kElementwise;  // each output element reads one input element, broadcast
  op.default_attrs = BroadcastToAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    return broadcast_shape("broadcast_to", in[0], attrs.as<BroadcastToAttrs>().shape);
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const Shape& x = call.input_shapes[0];
    for_each_element(call.output_shape, [&](const std::vector<int64_t>& c) { return in[0][broadcast_offset(x, c)]; }, y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    const tessera::ir::Tensor& x = in[0];
    const Shape& out = call.output_shape;
    const size_t lead = out.size() - x->shape.size();
    auto body = [&](const std::vector<tessera::ir::Var>& v) {
      std::vector<tessera::ir::Expr> index;
      for (size_t d = 0; d < x->shape.size(); ++d)
        index.push_back(x->shape[d] == 1 ? tessera::ir::make_int(0) : tessera::ir::Expr(v[lead + d]));
      return tessera::ir::load(x, index);
    };
    return tessera::ir::compute(out, body, unique_name("T_broadcast_to", {x}), "broadcast", ax_names(out.size()));
  };
  return op;
}
