#pragma once
// A quantized product of two activations: onnxruntime's QDQ MatMul of two
// run-time tensors (attention's Q.K^T and scores.V), TVM's qnn.batch_matmul
// followed by qnn.requantize:
//
//   acc[b, i, j] = sum_k (a[b, i, k] - a_zp) * (b[b, j, k] - b_zp)                        int32, exact
//   y[b, i, j]   = saturate(round(acc * (a_scale * b_scale / y_scale)) + y_zp)             (ops/requantize.h)
//
// a (B, M, K) and b (B, N, K) (batch_matmul's layout) uint8 or int8, each
// quantized per tensor with its own zero point. Both operands change at run
// time, so no zero point's share can be folded into a constant bias. Two
// ways to compute it, both exact, in the float batch_matmul's tiles
// (schedule/batch_matmul_tile.h):
//  - widened: zero points subtracted and bytes multiplied in 32-bit integers
//    (any K below 2^15), b transposed into a copy of its bytes (columns j
//    contiguous);
//  - byte_dot (a unsigned, K a multiple of 4, a target whose byte dot
//    product does not saturate: graph::convert_layout marks it): b's bytes
//    made signed (b - 128, its zero point less 128) and copied (B, K/4, N,
//    4), 4 consecutive k of a column in one 32-bit lane, so that vpdpbusd
//    sums 4 products per lane; the zero points' shares are subtracted after,
//    from the sums of a's rows and b's columns:
//      acc - b_zp * sum_k a[b, i, k] - a_zp * sum_k b[b, j, k] + K * a_zp * b_zp
#include <string>

#include "ir/tensor.h"
#include "ops/common.h"
#include "ops/quantize.h"
#include "ops/requantize.h"

namespace tessera::ops {

struct QLinearBatchMatmulAttrs {
  QuantizeAttrs a, b;
  // Its x_scale is a's scale; b's scale is the "weight" scale it multiplies.
  Requantization output;
  bool byte_dot = false;  // computed with the byte dot product (see above)
  std::string to_string() const;
  void validate() const;  // throws tessera::Error naming qlinear_batch_matmul
};

// (B, M, N); throws naming the operator for operands that do not multiply.
Shape qlinear_batch_matmul_output_shape(const Shape& a, const Shape& b);

// Whether a product of `a` and `b` (shapes, attrs' types) can take the byte
// dot product.
bool qlinear_batch_matmul_takes_byte_dot(const Shape& a, const QLinearBatchMatmulAttrs& attrs);

// The transposed copy of b's bytes (tag batch_matmul_transpose_b), the int32
// accumulator (tag qlinear_batch_matmul, axes b, i, j, reduce k; with
// byte_dot: reduce k_outer, k_4, and the sums of a's rows and b's columns,
// tags qlinear_batch_matmul_row_sums / _column_sums), then the
// requantization (tag qlinear_batch_matmul_requantize).
ir::Tensor qlinear_batch_matmul(const ir::Tensor& a, const ir::Tensor& b, const QLinearBatchMatmulAttrs& attrs);

namespace reference {
void qlinear_batch_matmul(const float* a, const float* b, const Shape& as, const Shape& bs,
                          const QLinearBatchMatmulAttrs& attrs, float* y);
}  // namespace reference

}  // namespace tessera::ops
