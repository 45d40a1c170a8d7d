#pragma once
// Unary math operators: the activations of transformers and modern CNNs (erf,
// gelu, silu, hard_sigmoid, tanh) and the pointwise functions older
// exporters spell them with (exp, log, sqrt, reciprocal, negative, abs).
// Each is elementwise: compile fuses it into the kernel before it.
#include <string>

#include "ir/tensor.h"

namespace tessera::ops {

// gelu(x) = x * Phi(x): exact (erf), or PyTorch's / ONNX's tanh form.
struct GeluAttrs {
  bool tanh_approximation = false;
  std::string to_string() const { return tanh_approximation ? "approximate=tanh" : "approximate=none"; }
};

// hard_sigmoid(x) = clamp(alpha * x + beta, 0, 1); ONNX's defaults.
struct HardSigmoidAttrs {
  float alpha = 0.2f, beta = 0.5f;
  std::string to_string() const;
};

// The scalar functions the references use, one value at a time.
float erf_of(float x);
float gelu_of(float x, bool tanh_approximation);
float hard_sigmoid_of(float x, float alpha, float beta);
float silu_of(float x);

// The compute declarations of the two with attributes: same shape, tag
// "elemwise" (the others are declared through the registry).
ir::Tensor gelu(const ir::Tensor& x, const GeluAttrs& attrs);
ir::Tensor hard_sigmoid(const ir::Tensor& x, const HardSigmoidAttrs& attrs);

}  // namespace tessera::ops
