#pragma once
// Injective operators that fuse after a convolution, dense or pooling:
// same-shape ones are tagged "elemwise", broadcasting ones "broadcast".
// Output axes are named ax0, ax1, ...
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "ops/common.h"

namespace tessera::ops {

// The attributes of bias_add: the axis of data the bias runs along.
struct BiasAddAttrs {
  int64_t axis = 1;  // negative counts from the last axis
  std::string to_string() const { return "axis=" + std::to_string(axis); }
};

// The attributes of clip.
struct ClipAttrs {
  float min = 0.0f, max = 6.0f;  // relu6 by default
  std::string to_string() const;
};

// NumPy broadcasting: shapes aligned at the last axis; a dimension of 1 stretches.
Shape broadcast_shape(const std::string& op, const Shape& a, const Shape& b);
// Indices into `t` for output position v under broadcasting to an output of rank v.size().
std::vector<ir::Expr> broadcast_index(const ir::Tensor& t, const std::vector<ir::Var>& v);

struct Operator;
// The operator of two broadcast inputs whose reference applies `scalar` and
// whose declaration `expression` to each pair of elements (T_<name>):
// elementwise, fused as an epilogue.
Operator binary_operator(const std::string& name, float (*scalar)(float, float),
                         ir::Expr (*expression)(ir::Expr, ir::Expr));

// T_add(ax..) = data[ax..] + bias[ax[axes[0]], ax[axes[1]], ...]; bias has one
// dimension per entry of `axes`, equal to data's extent there (e.g. axes {1} for
// NCHW, {3} for NHWC, {1, 4} for NCHWc with bias shaped (C/oc_bn, oc_bn)). Tag "broadcast".
ir::Tensor bias_add(const ir::Tensor& data, const ir::Tensor& bias, const std::vector<size_t>& axes);
ir::Tensor bias_add(const ir::Tensor& data, const ir::Tensor& bias, size_t axis = 1);
// T_add / T_multiply with broadcasting.
ir::Tensor add(const ir::Tensor& a, const ir::Tensor& b);
ir::Tensor multiply(const ir::Tensor& a, const ir::Tensor& b);
// T_relu = max(x, 0).
ir::Tensor relu(const ir::Tensor& x);
// T_clip = min(max(x, lo), hi); lo <= hi.
ir::Tensor clip(const ir::Tensor& x, float lo, float hi);

}  // namespace tessera::ops
