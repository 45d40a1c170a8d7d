#include "ops/dense.h"

#include "ops/operator.h"
#include "ops/reference.h"
#include "tessera/error.h"

namespace tessera::ops {

Shape dense_output_shape(const Shape& data, const Shape& weight) {
  check_rank("dense", "data (M, K)", data, 2);
  check_rank("dense", "weight (N, K)", weight, 2);
  check_dims_positive("dense", "data", data);
  check_dims_positive("dense", "weight", weight);
  if (data[1] != weight[1])
    fail("dense", "reduction length K differs: data " + shape_to_string(data) + " has K=" + std::to_string(data[1]) +
                      ", weight " + shape_to_string(weight) + " has K=" + std::to_string(weight[1]));
  return {data[0], weight[0]};
}

Shape batch_matmul_output_shape(const Shape& a, const Shape& b) {
  check_rank("batch_matmul", "a (B, M, K)", a, 3);
  check_rank("batch_matmul", "b (B, N, K)", b, 3);
  check_dims_positive("batch_matmul", "a", a);
  check_dims_positive("batch_matmul", "b", b);
  if (a[0] != b[0])
    fail("batch_matmul", "batch sizes differ: a has B=" + std::to_string(a[0]) + ", b has B=" + std::to_string(b[0]));
  if (a[2] != b[2])
    fail("batch_matmul", "reduction length K differs: a has K=" + std::to_string(a[2]) + ", b has K=" +
                             std::to_string(b[2]));
  return {a[0], a[1], b[1]};
}

ir::Tensor dense(const ir::Tensor& data, const ir::Tensor& weight) {
  Shape out = dense_output_shape(data->shape, weight->shape);
  ir::IterVar k = ir::reduce_axis(data->shape[1], "k");
  auto body = [&](const std::vector<ir::Var>& v) {
    return ir::sum(ir::load(data, {v[0], k.var}) * ir::load(weight, {v[1], k.var}), {k});
  };
  return ir::compute(out, body, unique_name("T_dense", {data, weight}), "dense", {"i", "j"});
}

ir::Tensor dense_pack(const ir::Tensor& data, const ir::Tensor& packed_weight) {
  const Shape& w = packed_weight->shape;
  if (data->shape.size() != 2 || w.size() != 3)
    throw Error("dense_pack: data must be (M, K) and weight (N/bn, K, bn), got data " + shape_to_string(data->shape) +
                " and weight " + shape_to_string(w));
  if (w[1] != data->shape[1])
    throw Error("dense_pack: weight " + shape_to_string(w) + " has K=" + std::to_string(w[1]) + " but data " +
                shape_to_string(data->shape) + " has K=" + std::to_string(data->shape[1]));
  const int64_t bn = w[2];
  ir::IterVar k = ir::reduce_axis(data->shape[1], "k");
  auto body = [&](const std::vector<ir::Var>& v) {
    return ir::sum(ir::load(data, {v[0], k.var}) *
                       ir::load(packed_weight, {ir::floordiv(v[1], bn), k.var, ir::floormod(v[1], bn)}),
                   {k});
  };
  return ir::compute({data->shape[0], w[0] * bn}, body, unique_name("T_dense_pack", {data, packed_weight}),
                     "dense_pack", {"i", "j"}, {{"bn", std::to_string(bn)}});
}

int64_t dense_pack_block(int64_t n) {
  // Powers of two map onto whole vectors; a 40-wide block ran 5x slower than
  // an 8-wide one on 512->1000 (tessera op dense --layout packed --oc-bn 40).
  for (int64_t bn = 64; bn >= 8; bn /= 2)
    if (n % bn == 0) return bn;
  for (int64_t bn = 64; bn > 1; --bn)
    if (n % bn == 0) return bn;
  return 1;
}

std::vector<float> pack_dense_weight(const float* weight, int64_t n, int64_t k, int64_t bn) {
  if (bn <= 0 || n % bn != 0)
    throw Error("dense_pack: block " + std::to_string(bn) + " does not divide N=" + std::to_string(n));
  std::vector<float> out(n * k);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t kk = 0; kk < k; ++kk) out[((j / bn) * k + kk) * bn + j % bn] = weight[j * k + kk];
  return out;
}

ir::Tensor batch_matmul(const ir::Tensor& a, const ir::Tensor& b) {
  Shape out = batch_matmul_output_shape(a->shape, b->shape);
  // B (batch, N, K) transposed to (batch, K, N) first: the product's vectors
  // then load N-contiguous columns instead of gathering with a stride of K
  // (1.9 -> ~100 GFLOPS on attention's 12x128x64 products).
  const ir::Tensor bt = ir::compute(
      {b->shape[0], b->shape[2], b->shape[1]},
      [&](const std::vector<ir::Var>& v) { return ir::load(b, {v[0], v[2], v[1]}); },
      unique_name("T_batch_matmul_bT", {b}), "batch_matmul_transpose_b", {"b", "k", "j"}, {{"layout_copy", "1"}});
  ir::IterVar k = ir::reduce_axis(a->shape[2], "k");
  auto body = [&](const std::vector<ir::Var>& v) {
    return ir::sum(ir::load(a, {v[0], v[1], k.var}) * ir::load(bt, {v[0], k.var, v[2]}), {k});
  };
  return ir::compute(out, body, unique_name("T_batch_matmul_NT", {a, b}), "batch_matmul", {"b", "i", "j"});
}

}  // namespace tessera::ops


namespace tessera::ops {
// ---------------------------------------------------------------------------
// The dense, matmul and batch_matmul operators.

namespace {

std::string str(int64_t v) { return std::to_string(v); }

// dense's weight (N, K) stored as (N/bn, K, bn) for dense_pack.
StoredConstant packed_dense_weight() {
  StoredConstant s;
  s.shape = [](const OperatorCall&, size_t input, const Shape& shape) {
    if (input != 1) return shape;
    const int64_t bn = dense_pack_block(shape[0]);
    return Shape{shape[0] / bn, shape[1], bn};
  };
  s.values = [](const OperatorCall&, size_t input, const float* value, const Shape& shape) {
    if (input != 1) return std::vector<float>(value, value + num_elements(shape));
    return pack_dense_weight(value, shape[0], shape[1], dense_pack_block(shape[0]));
  };
  return s;
}

}  // namespace

}  // namespace tessera::ops

TESSERA_OPERATOR(dense) {
  using namespace tessera::ops;
  Operator op;
  op.name = "dense";  // x (M, K) . W (N, K)^T
  op.num_inputs = 2;
  op.pattern = FusionPattern::kAnchor;
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs&) {
    require_rank("data", in[0], 2);
    require_rank("weight", in[1], 2);
    if (in[0][1] != in[1][1])
      shape_error("weight " + shape_to_string(in[1]) + " expects " + str(in[1][1]) + " input features, data " +
                  shape_to_string(in[0]) + " has " + str(in[0][1]));
    return Shape{in[0][0], in[1][0]};
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const Shape &x = call.input_shapes[0], &w = call.input_shapes[1];
    reference::dense(in[0], in[1], x[0], w[0], x[1], y);
  };
  op.compute = [](const OperatorCall&, const std::vector<tessera::ir::Tensor>& in) {
    return dense_pack(in[0], in[1]);  // the weight is stored packed
  };
  op.stored_constant = packed_dense_weight();
  // The weight is packed on every target: dense_pack.x86 and dense.gpu tune it.
  const auto packed = [](const OperatorCall& call) -> std::optional<TemplateCall> {
    const Shape &x = call.input_shapes[0], &w = call.input_shapes[1];
    if (x.size() != 2 || w.size() != 2 || !call.constant_inputs.at(1)) return std::nullopt;
    TemplateCall t{"dense", {}};
    t.args.input = x;
    t.args.weight = w;
    t.args.layout = "packed";
    t.args.oc_bn = dense_pack_block(w[0]);
    return t;
  };
  op.strategies = {{"llvm", packed}, {"cuda", packed}, {"opencl", packed}};
  return op;
}

// Compile has no kernel for matmul: the importers' passes turn it into dense.
TESSERA_OPERATOR(matmul) {
  using namespace tessera::ops;
  Operator op;
  op.name = "matmul";  // a (..., K) . b (K, N)
  op.num_inputs = 2;
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs&) {
    if (in[0].empty()) shape_error("a must have rank >= 1, got []");
    require_rank("b", in[1], 2);
    if (in[0].back() != in[1][0])
      shape_error("a " + shape_to_string(in[0]) + " has " + str(in[0].back()) + " columns, b " +
                  shape_to_string(in[1]) + " has " + str(in[1][0]) + " rows");
    Shape out = in[0];
    out.back() = in[1][1];
    return out;
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    // a (..., K) . b (K, N) is dense against b transposed to (N, K).
    const int64_t k = call.input_shapes[1][0], n = call.input_shapes[1][1];
    std::vector<float> bt(static_cast<size_t>(k * n));
    reference::transpose(in[1], call.input_shapes[1], {1, 0}, bt.data());
    reference::dense(in[0], bt.data(), num_elements(call.input_shapes[0]) / k, n, k, y);
  };
  return op;
}

TESSERA_OPERATOR(batch_matmul) {
  using namespace tessera::ops;
  Operator op;
  op.name = "batch_matmul";  // a (B, M, K) . b (B, N, K)^T
  op.num_inputs = 2;
  op.pattern = FusionPattern::kAnchor;
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs&) {
    require_rank("a", in[0], 3);
    require_rank("b", in[1], 3);
    if (in[0][0] != in[1][0] || in[0][2] != in[1][2])
      shape_error("a " + shape_to_string(in[0]) + " (B, M, K) and b " + shape_to_string(in[1]) +
                  " (B, N, K) differ in B or K");
    return Shape{in[0][0], in[0][1], in[1][1]};
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const Shape &a = call.input_shapes[0], &b = call.input_shapes[1];
    reference::batch_matmul(in[0], in[1], a[0], a[1], b[1], a[2], y);
  };
  op.compute = [](const OperatorCall&, const std::vector<tessera::ir::Tensor>& in) { return batch_matmul(in[0], in[1]); };
  const auto product = [](const OperatorCall& call) -> std::optional<TemplateCall> {
    TemplateCall t{"batch_matmul", {}};
    t.args.input = call.input_shapes[0];
    t.args.weight = call.input_shapes[1];
    return t;
  };
  op.strategies = {{"llvm", product}, {"cuda", product}, {"opencl", product}};
  return op;
}
