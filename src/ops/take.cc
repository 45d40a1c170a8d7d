// take: rows (or slices along any axis) of a table picked by indices that a
// graph input carries, as an embedding looks up token ids. One kernel; the
// index is read, wrapped and clamped per output element.
#include "ops/take.h"

#include <algorithm>

#include "ops/operator.h"

namespace tessera::ops {
namespace {

Shape taken_shape(const Shape& data, const Shape& indices, const TakeAttrs& a) {
  if (a.axis < 0 || a.axis >= static_cast<int64_t>(data.size()))
    shape_error("axis " + std::to_string(a.axis) + " is outside data " + shape_to_string(data));
  Shape out(data.begin(), data.begin() + a.axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + a.axis + 1, data.end());
  return out;
}

// The row an index picks: negative counts from the end, then clamped. Ids
// are whole numbers (the runtime checks integer inputs), so truncation is exact.
int64_t resolve(float index, int64_t extent) {
  auto i = static_cast<int64_t>(index);
  if (i < 0) i += extent;
  return std::clamp<int64_t>(i, 0, extent - 1);
}

}  // namespace
}  // namespace tessera::ops

TESSERA_OPERATOR(take) {
  using namespace tessera::ops;
  namespace ir = tessera::ir;
  Operator op;
  op.name = "take";
  op.num_inputs = 2;  // data, indices
  op.default_attrs = TakeAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    return taken_shape(in[0], in[1], attrs.as<TakeAttrs>());
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const auto axis = static_cast<size_t>(call.attrs.as<TakeAttrs>().axis);
    const Shape& data = call.input_shapes[0];
    const int64_t outer = num_elements(Shape(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(axis)));
    const int64_t inner = num_elements(Shape(data.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.end()));
    const int64_t count = num_elements(call.input_shapes[1]), extent = data[axis];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < count; ++k) {
        const float* row = in[0] + (o * extent + resolve(in[1][k], extent)) * inner;
        std::copy(row, row + inner, y + (o * count + k) * inner);
      }
  };
  op.compute = [](const OperatorCall& call, const std::vector<ir::Tensor>& in) {
    const auto axis = static_cast<size_t>(call.attrs.as<TakeAttrs>().axis);
    const ir::Tensor &data = in[0], &indices = in[1];
    const size_t index_rank = indices->shape.size();
    const int64_t extent = data->shape[axis];
    auto body = [&](const std::vector<ir::Var>& v) {
      std::vector<ir::Expr> at;
      for (size_t d = 0; d < index_rank; ++d) at.push_back(v[axis + d]);
      ir::Expr i = ir::cast(ir::DType::Int64, ir::load(indices, at));
      i = ir::select(i < ir::make_int(0), i + ir::make_int(extent), i);
      i = ir::min(ir::max(i, ir::make_int(0)), ir::make_int(extent - 1));
      std::vector<ir::Expr> index;
      for (size_t d = 0; d < axis; ++d) index.push_back(v[d]);
      index.push_back(i);
      for (size_t d = axis + 1; d < data->shape.size(); ++d) index.push_back(v[d - 1 + index_rank]);
      return ir::load(data, index);
    };
    return ir::compute(call.output_shape, body, unique_name("T_take", {data}), "injective",
                       ax_names(call.output_shape.size()));
  };
  return op;
}
