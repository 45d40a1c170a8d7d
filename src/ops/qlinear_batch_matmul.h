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
// time, so no zero point's share can be folded into a constant bias: the
// kernel subtracts them and multiplies in 32-bit integers (exact for any K
// below 2^15), its tiles those of the float batch_matmul (b transposed into
// a copy of its bytes, columns j contiguous; schedule/batch_matmul_tile.h).
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
  std::string to_string() const;
  void validate() const;  // throws tessera::Error naming qlinear_batch_matmul
};

// (B, M, N); throws naming the operator for operands that do not multiply.
Shape qlinear_batch_matmul_output_shape(const Shape& a, const Shape& b);

// The transposed copy of b's bytes (tag batch_matmul_transpose_b), the int32
// accumulator (tag qlinear_batch_matmul, axes b, i, j, reduce k), then the
// requantization (tag qlinear_batch_matmul_requantize).
ir::Tensor qlinear_batch_matmul(const ir::Tensor& a, const ir::Tensor& b, const QLinearBatchMatmulAttrs& attrs);

namespace reference {
void qlinear_batch_matmul(const float* a, const float* b, const Shape& as, const Shape& bs,
                          const QLinearBatchMatmulAttrs& attrs, float* y);
}  // namespace reference

}  // namespace tessera::ops
