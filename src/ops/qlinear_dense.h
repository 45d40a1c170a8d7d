#pragma once
// A quantized matrix product: ONNX QLinearMatMul / onnxruntime's QGemm with
// a constant weight, TVM's qnn.dense followed by qnn.requantize:
//
//   acc[m, n] = sum_k x[m, k] * w[n, k] + bias[n]                                int32, exact
//   y[m, n]   = saturate(round(acc * (x_scale * w_scale[n] / y_scale)) + y_zp)    (ops/requantize.h)
//
// x (M, K) uint8 or int8 per tensor, w (N, K) int8 per output symmetric
// (w_scale (N)), bias (N) int32 in units of x_scale * w_scale[n] with x's
// zero point folded in: bias[n] - x_zero_point * sum_k w[n, k] (what
// zero_point_share gives), so that the kernel multiplies stored bytes only,
// as the byte dot-product instructions do. Marked `packed` (a constant
// weight, K a multiple of 4, unsigned x) the weight is stored (N/bn, K/4, bn,
// 4): each output's 4 consecutive products are the 4 bytes of one 32-bit
// lane, bn lanes side by side.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "ops/common.h"
#include "ops/requantize.h"

namespace tessera::ops {

struct QLinearDenseAttrs {
  std::string x_dtype = "uint8";
  Requantization output;
  // The weight stored packed for the byte dot product: set by
  // graph::convert_layout where the target's dot product computes these
  // weights exactly (pmaddubsw saturates pairs beyond +-64); else the plain
  // product, exact anywhere.
  bool packed = false;
  // The products centered: acc = sum_k (x - 128) * max(w, -127)
  // + bias, the bias then holding 128 * sum_k w[n, k] besides x's zero
  // point's share (graph::convert_layout folds it), so the sum is the same
  // for weights within +-127. Signed times signed within +-127, a saturating
  // byte dot product computes it exactly (ir::BytesProduct): onnxruntime's
  // int8 weights (+-127) on AVX2 without VNNI in one product, not two halves.
  bool centered = false;
  std::string to_string() const;
  void validate() const;  // throws tessera::Error naming qlinear_dense
};

Shape qlinear_dense_output_shape(const Shape& x, const Shape& w, const Shape& w_scale, const Shape& bias);

// The packed weight's block: the largest multiple of 4 up to 64 dividing N
// (a classifier's 1000: 40), or 0 where K is no multiple of 4 or none divides.
int64_t qlinear_dense_block(int64_t n, int64_t k);
std::vector<float> pack_qlinear_dense_weight(const float* w, int64_t n, int64_t k, int64_t bn);

// The accumulator tagged qlinear_dense_pack (axes i, j; reduce k_outer, k_4:
// a byte dot product; attribute bn), then the requantization tagged
// qlinear_dense_requantize. w packed by pack_qlinear_dense_weight.
ir::Tensor qlinear_dense_pack(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor& w_scale,
                              const ir::Tensor& bias, const QLinearDenseAttrs& attrs);
// The same over an unpacked (N, K) weight (K no multiple of 4), tag qlinear_dense.
ir::Tensor qlinear_dense(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor& w_scale, const ir::Tensor& bias,
                         const QLinearDenseAttrs& attrs);

namespace reference {
void qlinear_dense(const float* x, const float* w, const float* w_scale, const float* bias, int64_t m, int64_t n,
                   int64_t k, const QLinearDenseAttrs& attrs, float* y);
}  // namespace reference

}  // namespace tessera::ops
