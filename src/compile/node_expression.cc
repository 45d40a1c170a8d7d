#include "compile/node_expression.h"

#include <cstring>

#include "tessera/error.h"

namespace tessera::build {

using graph::Node;

ir::Tensor stored_as(const ir::Tensor& t, ir::DType stored) {
  if (t->dtype == stored) return t;
  return ir::compute(
      t->shape,
      [&](const std::vector<ir::Var>& v) {
        std::vector<ir::Expr> at(v.begin(), v.end());
        return ir::cast(stored, ir::load(t, at));
      },
      t->name + ".stored", "elemwise");
}

ir::Tensor node_expression(const graph::Graph& g, const Node& n, const std::vector<ir::Tensor>& in) {
  const ops::Operator& op = n.op.definition();
  if (!op.compute) throw Error(n.describe() + ": this operator is not supported by the build yet");
  try {
    const ir::Tensor t = op.compute(graph::operator_call(g, n), in);
    const ir::DType stored = graph::storage_type(n.type.dtype);
    return stored == ir::DType::Float32 ? t : stored_as(t, stored);
  } catch (const Error& e) {
    const std::string message = e.what(), prefix = n.describe() + ": ";
    if (message.rfind(prefix, 0) == 0) throw;
    throw Error(prefix + message);
  }
}

runtime::NDArray kernel_constant(const graph::Graph& g, const Node& n, size_t index, const runtime::NDArray& value) {
  const std::optional<ops::StoredConstant>& stored = n.op.definition().stored_constant;
  if (!stored) return runtime::copy_of(value);
  const ops::OperatorCall call = graph::operator_call(g, n);
  runtime::NDArray out(stored->shape(call, index, value.shape()));
  const std::vector<float> values = stored->values(call, index, value.data(), value.shape());
  std::memcpy(out.data(), values.data(), values.size() * sizeof(float));
  return out;
}

graph::Shape kernel_constant_shape(const graph::Graph& g, const Node& n, size_t index, const graph::Shape& shape) {
  const std::optional<ops::StoredConstant>& stored = n.op.definition().stored_constant;
  return stored ? stored->shape(graph::operator_call(g, n), index, shape) : shape;
}

}  // namespace tessera::build
