#pragma once
// Matrix products with the weight stored transposed, as TVM declares them:
//   dense:        data (M, K), weight (N, K)      -> T_dense (M, N)
//   batch_matmul: a (B, M, K), b (B, N, K)        -> T_batch_matmul_NT (B, M, N)
#include "ir/tensor.h"
#include "ops/common.h"

namespace tessera::ops {

Shape dense_output_shape(const Shape& data, const Shape& weight);
Shape batch_matmul_output_shape(const Shape& a, const Shape& b);

// T_dense(i, j) += data[i, k] * weight[j, k]. Tag "dense".
ir::Tensor dense(const ir::Tensor& data, const ir::Tensor& weight);
// T_batch_matmul_NT(b, i, j) += a[b, i, k] * b[b, j, k]. Tag "batch_matmul".
ir::Tensor batch_matmul(const ir::Tensor& a, const ir::Tensor& b);

}  // namespace tessera::ops
