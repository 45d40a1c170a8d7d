#include "ops/pad.h"

#include "ops/operator.h"
#include "ops/reference.h"
#include "support/checked_math.h"

namespace tessera::ops {

ir::Tensor pad(const ir::Tensor& data, const Shape& before, const Shape& after, float value,
               const std::string& name) {
  const size_t rank = data->shape.size();
  const std::string values = " must have " + std::to_string(rank) + " values, got ";
  if (before.size() != rank) fail("pad", "pad_before" + values + shape_to_string(before));
  if (after.size() != rank) fail("pad", "pad_after" + values + shape_to_string(after));
  Shape out_shape(rank);
  for (size_t d = 0; d < rank; ++d) {
    check_non_negative("pad", "pad_before[" + std::to_string(d) + "]", before[d]);
    check_non_negative("pad", "pad_after[" + std::to_string(d) + "]", after[d]);
    out_shape[d] = data->shape[d] + before[d] + after[d];
  }
  auto body = [&](const std::vector<ir::Var>& i) -> ir::Expr {
    ir::Expr inside;  // stays undefined when no dimension is padded
    std::vector<ir::Expr> source;
    for (size_t d = 0; d < rank; ++d) {
      source.push_back(minus(i[d], before[d]));
      std::vector<ir::Expr> bounds;
      if (before[d] > 0) bounds.push_back(i[d] >= ir::Expr(before[d]));
      if (after[d] > 0) bounds.push_back(i[d] < ir::Expr(before[d] + data->shape[d]));
      for (auto& b : bounds) inside = inside ? (inside && b) : b;
    }
    ir::Expr loaded = ir::load(data, source);
    if (!inside) return loaded;
    // Integer data (quantized) pads with an integer and keeps its storage type.
    if (ir::is_integer(data->dtype) && data->dtype != ir::DType::Int64)
      return ir::cast(data->dtype, ir::select(inside, loaded, ir::make_int(static_cast<int64_t>(value))));
    return ir::select(inside, loaded, ir::Expr(value));
  };
  std::vector<std::string> axis_names;
  for (size_t d = 0; d < rank; ++d) axis_names.push_back("i" + std::to_string(d));
  return ir::compute(out_shape, body, unique_name(name, {data}), "pad", axis_names);
}

}  // namespace tessera::ops

TESSERA_OPERATOR(pad) {
  using namespace tessera::ops;
  Operator op;
  op.name = "pad";
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    const auto& a = attrs.as<PadAttrs>();
    if (a.before.size() != in[0].size() || a.after.size() != in[0].size())
      shape_error("before " + shape_to_string(a.before) + " and after " + shape_to_string(a.after) +
                  " must have one entry per axis of data " + shape_to_string(in[0]));
    Shape out = in[0];
    for (size_t d = 0; d < out.size(); ++d) {
      require_non_negative("before[" + std::to_string(d) + "]", a.before[d]);
      require_non_negative("after[" + std::to_string(d) + "]", a.after[d]);
      out[d] = tessera::support::checked_add(tessera::support::checked_add(out[d], a.before[d], "pad"), a.after[d],
                                             "pad");
    }
    return out;
  };
  // Quantized data pads in its own type (pad keeps integer storage).
  op.infer_dtype = [](const std::vector<tessera::ir::DType>& in, const Attrs&) { return in[0]; };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const auto& a = call.attrs.as<PadAttrs>();
    reference::pad(in[0], call.input_shapes[0], a.before, a.after, a.value, y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    const auto& a = call.attrs.as<PadAttrs>();
    return pad(in[0], a.before, a.after, a.value, "T_pad");
  };
  return op;
}
