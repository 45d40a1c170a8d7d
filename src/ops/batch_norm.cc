#include "ops/batch_norm.h"

#include "ops/operator.h"
#include "ops/reference.h"

namespace tessera::ops {

std::string BatchNormAttrs::to_string() const {
  return "epsilon=" + number_to_string(epsilon) + " axis=" + std::to_string(axis);
}

}  // namespace tessera::ops

TESSERA_OPERATOR(batch_norm) {
  using namespace tessera::ops;
  Operator op;
  op.name = "batch_norm";  // inputs: x, gamma, beta, mean, var
  op.num_inputs = 5;
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    const auto& a = attrs.as<BatchNormAttrs>();
    const int64_t axis = normalize_axis(a.axis, in[0].size(), "axis");
    if (!(a.epsilon >= 0)) shape_error("epsilon must be non-negative");
    const char* names[] = {"gamma", "beta", "mean", "var"};
    for (int i = 0; i < 4; ++i)
      if (in[i + 1] != Shape{in[0][axis]})
        shape_error(std::string(names[i]) + " " + shape_to_string(in[i + 1]) + " does not match the " +
                    std::to_string(in[0][axis]) + " channels (axis " + std::to_string(axis) + ") of data " +
                    shape_to_string(in[0]));
    return in[0];
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const auto& a = call.attrs.as<BatchNormAttrs>();
    const Shape& x = call.input_shapes[0];
    const auto axis = static_cast<size_t>(normalize_axis(a.axis, x.size(), "axis"));
    reference::batch_norm(in[0], x, axis, in[1], in[2], in[3], in[4], a.epsilon, y);
  };
  return op;
}
