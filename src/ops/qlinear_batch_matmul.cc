#include "ops/qlinear_batch_matmul.h"

#include "ops/operator.h"

namespace tessera::ops {

namespace {

constexpr const char* kOp = "qlinear_batch_matmul";

// The output's storage type, once a and b are stored as the attributes say.
ir::DType output_type(const QLinearBatchMatmulAttrs& attrs, ir::DType a, ir::DType b) {
  if (a != quantized_type(kOp, attrs.a.dtype) || b != quantized_type(kOp, attrs.b.dtype))
    fail(kOp, "a and b must be stored as " + attrs.a.dtype + " and " + attrs.b.dtype + ", got " + ir::to_string(a) +
                  " and " + ir::to_string(b));
  return quantized_type(kOp, attrs.output.y_dtype);
}

}  // namespace

std::string QLinearBatchMatmulAttrs::to_string() const {
  return "a: " + a.to_string() + " b: " + b.to_string() + " " +
         output.to_string(output.x_scale, a.zero_point, a.dtype) + (byte_dot ? " byte_dot" : "");
}

void QLinearBatchMatmulAttrs::validate() const {
  a.validate("qlinear_batch_matmul a");
  b.validate("qlinear_batch_matmul b");
  if (output.x_scale != a.scale) fail(kOp, "the requantization's x_scale must be a's scale");
  QuantizeAttrs{output.y_scale, output.y_zero_point, output.y_dtype}.validate("qlinear_batch_matmul y");
}

Shape qlinear_batch_matmul_output_shape(const Shape& a, const Shape& b) {
  check_rank(kOp, "a (B, M, K)", a, 3);
  check_rank(kOp, "b (B, N, K)", b, 3);
  if (a[0] != b[0] || a[2] != b[2])
    fail(kOp, "a " + shape_to_string(a) + " (B, M, K) and b " + shape_to_string(b) + " (B, N, K) differ in B or K");
  // Each product is below 2^16 in magnitude: K of them stay within int32.
  if (a[2] >= (int64_t{1} << 15)) fail(kOp, "K=" + std::to_string(a[2]) + " could overflow its int32 sums");
  return {a[0], a[1], b[1]};
}

bool qlinear_batch_matmul_takes_byte_dot(const Shape& a, const QLinearBatchMatmulAttrs& attrs) {
  return attrs.a.dtype == "uint8" && a.size() == 3 && a[2] % 4 == 0;
}

namespace {

// The byte_dot form (see the header).
ir::Tensor byte_dot_product(const ir::Tensor& a, const ir::Tensor& b, const QLinearBatchMatmulAttrs& attrs) {
  const int64_t batches = a->shape[0], m = a->shape[1], k = a->shape[2], n = b->shape[1];
  // Signed bytes: uint8 less 128 (its zero point too), int8 as it is.
  const int64_t shift = attrs.b.dtype == "uint8" ? 128 : 0;
  const int64_t b_zp = attrs.b.zero_point - shift;
  const ir::Tensor bt =
      ir::compute({batches, k / 4, n, 4},
                  [&](const std::vector<ir::Var>& v) {
                    const ir::Expr column = ir::Expr(v[1]) * ir::Expr(int64_t{4}) + ir::Expr(v[3]);
                    return ir::cast(ir::DType::Int8, ir::load(b, {v[0], v[2], column}) - ir::Expr(shift));
                  },
                  unique_name("T_batch_matmul_bT", {b}), "batch_matmul_transpose_b", {"b", "k_outer", "j", "k_4"},
                  {{"layout_copy", "1"}});
  const ir::IterVar k_outer = ir::reduce_axis(k / 4, "k_outer"), k_4 = ir::reduce_axis(4, "k_4");
  auto column_of = [&](const ir::IterVar& outer, const ir::IterVar& inner) {
    return ir::Expr(outer.var) * ir::Expr(int64_t{4}) + ir::Expr(inner.var);
  };
  auto products = [&](const std::vector<ir::Var>& v) {
    return ir::sum(
        ir::load(a, {v[0], v[1], column_of(k_outer, k_4)}) * ir::load(bt, {v[0], k_outer.var, v[2], k_4.var}),
        {k_outer, k_4});
  };
  const ir::Tensor acc =
      ir::compute({batches, m, n}, products, unique_name("qlinear_batch_matmul", {a, b}), kOp, {"b", "i", "j"});
  const ir::IterVar rk = ir::reduce_axis(k, "rk");
  const ir::Tensor row_sums = ir::compute({batches, m},
                                          [&](const std::vector<ir::Var>& v) {
                                            return ir::sum(ir::load(a, {v[0], v[1], rk.var}), {rk});
                                          },
                                          unique_name("T_row_sums", {a}), "qlinear_batch_matmul_row_sums", {"b", "i"});
  const ir::IterVar ck_outer = ir::reduce_axis(k / 4, "ck_outer"), ck_4 = ir::reduce_axis(4, "ck_4");
  const ir::Tensor column_sums =
      ir::compute({batches, n},
                  [&](const std::vector<ir::Var>& v) {
                    return ir::sum(ir::load(bt, {v[0], ck_outer.var, v[1], ck_4.var}), {ck_outer, ck_4});
                  },
                  unique_name("T_column_sums", {b}), "qlinear_batch_matmul_column_sums", {"b", "j"});
  const int64_t both = k * attrs.a.zero_point * b_zp;
  auto requantize = [&](const std::vector<ir::Var>& v) {
    const ir::Expr total = ir::load(acc, to_exprs(v)) - ir::load(row_sums, {v[0], v[1]}) * ir::Expr(b_zp) -
                           ir::load(column_sums, {v[0], v[2]}) * ir::Expr(attrs.a.zero_point) + ir::Expr(both);
    return requantized(total, ir::Expr(attrs.b.scale), attrs.output, kOp);
  };
  return ir::compute({batches, m, n}, requantize, unique_name("T_requantize", {acc}), "qlinear_batch_matmul_requantize",
                     {"b", "i", "j"}, {{"quantization", attrs.to_string()}});
}

}  // namespace

ir::Tensor qlinear_batch_matmul(const ir::Tensor& a, const ir::Tensor& b, const QLinearBatchMatmulAttrs& attrs) {
  attrs.validate();
  const Shape out = qlinear_batch_matmul_output_shape(a->shape, b->shape);
  output_type(attrs, a->dtype, b->dtype);
  if (attrs.byte_dot) {
    if (!qlinear_batch_matmul_takes_byte_dot(a->shape, attrs))
      fail(kOp,
           "byte_dot needs unsigned a and K a multiple of 4, got a " + attrs.a.dtype + " " + shape_to_string(a->shape));
    return byte_dot_product(a, b, attrs);
  }
  // b's bytes transposed (batch, K, N), as the float product transposes its
  // floats: a vector of columns j is then one contiguous load.
  const ir::Tensor bt = ir::compute({b->shape[0], b->shape[2], b->shape[1]},
                                    [&](const std::vector<ir::Var>& v) {
                                      return ir::cast(b->dtype, ir::load(b, {v[0], v[2], v[1]}));
                                    },
                                    unique_name("T_batch_matmul_bT", {b}), "batch_matmul_transpose_b", {"b", "k", "j"},
                                    {{"layout_copy", "1"}});
  const ir::IterVar k = ir::reduce_axis(a->shape[2], "k");
  const ir::Expr a_zp(attrs.a.zero_point), b_zp(attrs.b.zero_point);
  auto products = [&](const std::vector<ir::Var>& v) {
    // Bytes computed in int32 (ir/expr.h), the literals' zero points too.
    return ir::sum((ir::load(a, {v[0], v[1], k.var}) - a_zp) * (ir::load(bt, {v[0], k.var, v[2]}) - b_zp), {k});
  };
  const ir::Tensor acc = ir::compute(out, products, unique_name("qlinear_batch_matmul", {a, b}), kOp, {"b", "i", "j"});
  auto requantize = [&](const std::vector<ir::Var>& v) {
    return requantized(ir::load(acc, to_exprs(v)), ir::Expr(attrs.b.scale), attrs.output, kOp);
  };
  return ir::compute(out, requantize, unique_name("T_requantize", {acc}), "qlinear_batch_matmul_requantize",
                     {"b", "i", "j"}, {{"quantization", attrs.to_string()}});
}

namespace reference {

void qlinear_batch_matmul(const float* a, const float* b, const Shape& as, const Shape& bs,
                          const QLinearBatchMatmulAttrs& attrs, float* y) {
  const int64_t batches = as[0], m = as[1], k = as[2], n = bs[1];
  const auto [lo, hi] = attrs.output.saturation(kOp);
  for (int64_t p = 0; p < batches; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t acc = 0;
        for (int64_t l = 0; l < k; ++l)
          acc += (static_cast<int64_t>(a[(p * m + i) * k + l]) - attrs.a.zero_point) *
                 (static_cast<int64_t>(b[(p * n + j) * k + l]) - attrs.b.zero_point);
        y[(p * m + i) * n + j] = requantized(acc, attrs.b.scale, attrs.output, lo, hi);
      }
}

}  // namespace reference

}  // namespace tessera::ops

TESSERA_OPERATOR(qlinear_batch_matmul) {
  using namespace tessera::ops;
  Operator op;
  op.name = "qlinear_batch_matmul";
  op.num_inputs = 2;  // a, b: both activations
  op.pattern = FusionPattern::kAnchor;
  op.default_attrs = QLinearBatchMatmulAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    attrs.as<QLinearBatchMatmulAttrs>().validate();
    return qlinear_batch_matmul_output_shape(in[0], in[1]);
  };
  op.infer_dtype = [](const std::vector<tessera::ir::DType>& in, const Attrs& attrs) {
    return output_type(attrs.as<QLinearBatchMatmulAttrs>(), in.at(0), in.at(1));
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    reference::qlinear_batch_matmul(in[0], in[1], call.input_shapes[0], call.input_shapes[1],
                                    call.attrs.as<QLinearBatchMatmulAttrs>(), y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    return qlinear_batch_matmul(in[0], in[1], call.attrs.as<QLinearBatchMatmulAttrs>());
  };
  return op;
}
