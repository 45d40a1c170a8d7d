// Comparisons, logic and where on tensors computed at run time (attention
// masks built from an input mask or positions). Booleans are float32 1 and
// 0, as every value computes in float32; any non-zero value reads as true.
// All are elementwise with NumPy broadcasting and fuse as epilogues.
#include <algorithm>
#include <cmath>

#include "ops/elementwise.h"
#include "ops/operator.h"

namespace tessera::ops {
namespace {

namespace ir = tessera::ir;

ir::Expr truth(ir::Expr condition) { return ir::select(condition, ir::make_float(1.0), ir::make_float(0.0)); }
ir::Expr is_true(ir::Expr x) { return x != ir::make_float(0.0); }
float truth(bool b) { return b ? 1.0f : 0.0f; }

// y = cond != 0 ? x : y, the three broadcast to one shape.
void reference_where(const OperatorCall& call, const std::vector<const float*>& in, float* y) {
  std::vector<int64_t> coord;
  const int64_t n = num_elements(call.output_shape);
  for (int64_t i = 0; i < n; ++i) {
    unravel(i, call.output_shape, coord);
    const float c = in[0][broadcast_offset(call.input_shapes[0], coord)];
    y[i] = c != 0.0f ? in[1][broadcast_offset(call.input_shapes[1], coord)]
                     : in[2][broadcast_offset(call.input_shapes[2], coord)];
  }
}

}  // namespace
}  // namespace tessera::ops

TESSERA_OPERATOR(equal) {
  using namespace tessera::ops;
  return binary_operator(
      "equal", [](float x, float y) { return truth(x == y); }, [](ir::Expr x, ir::Expr y) { return truth(x == y); });
}

TESSERA_OPERATOR(not_equal) {
  using namespace tessera::ops;
  return binary_operator(
      "not_equal", [](float x, float y) { return truth(x != y); }, [](ir::Expr x, ir::Expr y) { return truth(x != y); });
}

TESSERA_OPERATOR(less) {
  using namespace tessera::ops;
  return binary_operator(
      "less", [](float x, float y) { return truth(x < y); }, [](ir::Expr x, ir::Expr y) { return truth(x < y); });
}

TESSERA_OPERATOR(less_equal) {
  using namespace tessera::ops;
  return binary_operator(
      "less_equal", [](float x, float y) { return truth(x <= y); },
      [](ir::Expr x, ir::Expr y) { return truth(x <= y); });
}

TESSERA_OPERATOR(greater) {
  using namespace tessera::ops;
  return binary_operator(
      "greater", [](float x, float y) { return truth(x > y); }, [](ir::Expr x, ir::Expr y) { return truth(x > y); });
}

TESSERA_OPERATOR(greater_equal) {
  using namespace tessera::ops;
  return binary_operator(
      "greater_equal", [](float x, float y) { return truth(x >= y); },
      [](ir::Expr x, ir::Expr y) { return truth(x >= y); });
}

TESSERA_OPERATOR(logical_and) {
  using namespace tessera::ops;
  return binary_operator(
      "logical_and", [](float x, float y) { return truth(x != 0.0f && y != 0.0f); },
      [](ir::Expr x, ir::Expr y) { return truth(is_true(x) && is_true(y)); });
}

TESSERA_OPERATOR(logical_or) {
  using namespace tessera::ops;
  return binary_operator(
      "logical_or", [](float x, float y) { return truth(x != 0.0f || y != 0.0f); },
      [](ir::Expr x, ir::Expr y) { return truth(is_true(x) || is_true(y)); });
}

TESSERA_OPERATOR(logical_xor) {
  using namespace tessera::ops;
  return binary_operator(
      "logical_xor", [](float x, float y) { return truth((x != 0.0f) != (y != 0.0f)); },
      [](ir::Expr x, ir::Expr y) { return truth(is_true(x) != is_true(y)); });
}

TESSERA_OPERATOR(logical_not) {
  using namespace tessera::ops;
  Operator op = unary_elementwise_operator("logical_not");
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    reference_unary(call, in, y, [](float x) { return truth(x == 0.0f); });
  };
  op.compute = [](const OperatorCall&, const std::vector<ir::Tensor>& in) {
    const ir::Tensor& x = in[0];
    auto body = [&](const std::vector<ir::Var>& v) { return truth(ir::load(x, to_exprs(v)) == ir::make_float(0.0)); };
    return ir::compute(x->shape, body, unique_name("T_logical_not", {x}), "elemwise", ax_names(x->shape.size()));
  };
  return op;
}

// 1 where x is NaN, else 0 (ONNX IsNaN). PyTorch's masked attention guards
// its probabilities with it; recognize_attention removes that guard.
TESSERA_OPERATOR(is_nan) {
  using namespace tessera::ops;
  Operator op = unary_elementwise_operator("is_nan");
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    reference_unary(call, in, y, [](float x) { return truth(std::isnan(x)); });
  };
  op.compute = [](const OperatorCall&, const std::vector<ir::Tensor>& in) {
    const ir::Tensor& x = in[0];
    auto body = [&](const std::vector<ir::Var>& v) {
      ir::Expr e = ir::load(x, to_exprs(v));
      return truth(e != e);  // unordered: true only for NaN
    };
    return ir::compute(x->shape, body, unique_name("T_is_nan", {x}), "elemwise", ax_names(x->shape.size()));
  };
  return op;
}

TESSERA_OPERATOR(where) {
  using namespace tessera::ops;
  Operator op;
  op.name = "where";
  op.num_inputs = 3;  // condition, then, else
  op.pattern = FusionPattern::kElementwise;
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs&) {
    return broadcast_shape("where", in[0], broadcast_shape("where", in[1], in[2]));
  };
  op.reference = reference_where;
  op.compute = [](const OperatorCall& call, const std::vector<ir::Tensor>& in) {
    auto body = [&](const std::vector<ir::Var>& v) {
      return ir::select(is_true(ir::load(in[0], broadcast_index(in[0], v))), ir::load(in[1], broadcast_index(in[1], v)),
                        ir::load(in[2], broadcast_index(in[2], v)));
    };
    return ir::compute(call.output_shape, body, unique_name("T_where", {in[0], in[1], in[2]}), "broadcast",
                       ax_names(call.output_shape.size()));
  };
  return op;
}
