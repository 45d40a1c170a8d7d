#pragma once
// Matrix products with the weight stored transposed, as TVM declares them:
//   dense:        data (M, K), weight (N, K)      -> T_dense (M, N)
//   dense_pack:   data (M, K), weight (N/bn, K, bn) -> T_dense_pack (M, N)
//   batch_matmul: a (B, M, K), b (B, N, K)        -> T_batch_matmul_NT (B, M, N)
#include "ir/tensor.h"
#include "ops/common.h"

namespace tessera::ops {

Shape dense_output_shape(const Shape& data, const Shape& weight);
Shape batch_matmul_output_shape(const Shape& a, const Shape& b);

// T_dense(i, j) += data[i, k] * weight[j, k]. Tag "dense".
ir::Tensor dense(const ir::Tensor& data, const ir::Tensor& weight);
// T_dense_pack(i, j) += data[i, k] * weight[j / bn, k, j % bn]: the weight is
// packed so that bn consecutive outputs read one contiguous vector. Tag "dense_pack".
ir::Tensor dense_pack(const ir::Tensor& data, const ir::Tensor& packed_weight);
// The weight block for dense_pack with N outputs: the largest of 64, 32, 16, 8
// dividing N, else the largest divisor up to 64.
int64_t dense_pack_block(int64_t n);
// (N, K) -> (N/bn, K, bn).
std::vector<float> pack_dense_weight(const float* weight, int64_t n, int64_t k, int64_t bn);

// T_batch_matmul_NT(b, i, j) += a[b, i, k] * b[b, j, k]. Tag "batch_matmul".
ir::Tensor batch_matmul(const ir::Tensor& a, const ir::Tensor& b);

}  // namespace tessera::ops
