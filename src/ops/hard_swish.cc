// hard_swish (MobileNet-v3; ONNX HardSwish, torch.nn.Hardswish):
//   y = x * relu6(x + 3) / 6
// 0 below -3, x above 3, a parabola between. Elementwise: compile fuses it
// into the kernel of the convolution or dense before it.
#include <algorithm>

#include "ops/operator.h"

namespace tessera::ops {
namespace {

// NaN stays NaN (x * anything), as in PyTorch and onnxruntime.
float hard_swish_of(float x) { return x * std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f; }

ir::Tensor hard_swish(const ir::Tensor& x) {
  auto body = [&](const std::vector<ir::Var>& v) {
    const ir::Expr value = ir::load(x, to_exprs(v));
    const ir::Expr shifted = value + ir::Expr(3.0f);
    const ir::Expr relu6 = ir::min(ir::max(shifted, ir::Expr(0.0f)), ir::Expr(6.0f));
    return value * relu6 * ir::Expr(1.0f / 6.0f);
  };
  return ir::compute(x->shape, body, unique_name("T_hard_swish", {x}), "elemwise", ax_names(x->shape.size()));
}

}  // namespace
}  // namespace tessera::ops

TESSERA_OPERATOR(hard_swish) {
  using namespace tessera::ops;
  Operator op = unary_elementwise_operator("hard_swish");
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    reference_unary(call, in, y, hard_swish_of);
  };
  op.compute = [](const OperatorCall&, const std::vector<tessera::ir::Tensor>& in) { return hard_swish(in[0]); };
  return op;
}
