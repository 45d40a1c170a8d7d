#pragma once
// Typed attributes of graph nodes: one small struct per operator kind that has
// any, held in the node as a variant. Layouts are strings ("NCHW", "NHWC",
// "NCHW8c") because the layout passes will invent blocked ones; shape
// inference says which are supported by each operator.
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "ops/common.h"

namespace tessera::graph {

using ops::Shape;

// Operators without attributes (add, relu, dense, ...).
struct NoAttrs {};

struct Conv2dAttrs {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  std::string data_layout = "NCHW";    // or "NHWC"
  std::string kernel_layout = "OIHW";  // or "HWIO" (with NHWC)
  // A blocked 3x3 stride-1 convolution computed by Winograd's F(m x m, 3 x 3)
  // with this output tile m (ops/winograd_nchwc.h); 0: directly. The graph's
  // weight stays OIHW<i>i<o>o; the build transforms it.
  int64_t winograd_tile = 0;

  // Same stride, padding and dilation on both axes and all sides.
  static Conv2dAttrs symmetric(int64_t stride, int64_t pad, int64_t dilation = 1, int64_t groups = 1);
};

struct PoolAttrs {
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  // Output extent rounds up (PyTorch/ONNX ceil_mode); a window must still start
  // inside the input or the leading padding.
  bool ceil_mode = false;
  // Average pooling: whether padded positions count in the divisor.
  bool count_include_pad = false;
  std::string layout = "NCHW";  // or "NHWC"

  static PoolAttrs symmetric(int64_t kernel, int64_t stride, int64_t pad = 0);
};

struct GlobalPoolAttrs {
  std::string layout = "NCHW";  // or "NHWC"
};

struct BatchNormAttrs {
  double epsilon = 1e-5;
  int64_t axis = 1;  // the channel axis of x (3 for NHWC)
};

struct BiasAddAttrs {
  int64_t axis = 1;  // negative counts from the last axis
};

struct ClipAttrs {
  float min = 0.0f, max = 6.0f;  // relu6 by default
};

struct ConcatAttrs {
  int64_t axis = 1;  // negative counts from the last axis
};

// ONNX Reshape semantics: 0 copies the input's extent at that position, one -1
// is inferred from the element count.
struct ReshapeAttrs {
  Shape newshape;
};

// (d0 * ... * d(axis-1), d(axis) * ... * d(rank-1)), as ONNX Flatten.
struct FlattenAttrs {
  int64_t axis = 1;
};

struct TransposeAttrs {
  std::vector<int64_t> perm;  // output axis i is input axis perm[i]
};

struct PadAttrs {
  Shape before, after;  // one entry per axis
  float value = 0.0f;
};

struct SoftmaxAttrs {
  int64_t axis = -1;
};

struct DropoutAttrs {
  double rate = 0.5;  // kept for printing and export; inference ignores it
};

// Activation layouts: "NCHW", "NHWC", or blocked ones like "NCHW8c" (channel c
// = outer * 8 + inner, with the inner block last).
struct LayoutTransformAttrs {
  std::string src, dst;
};

using Attrs = std::variant<NoAttrs, Conv2dAttrs, PoolAttrs, GlobalPoolAttrs, BatchNormAttrs, BiasAddAttrs, ClipAttrs,
                           ConcatAttrs, ReshapeAttrs, FlattenAttrs, TransposeAttrs, PadAttrs, SoftmaxAttrs,
                           DropoutAttrs, LayoutTransformAttrs>;

// "strides=(2, 2) padding=(1, 1, 1, 1) ..." in a fixed order; empty for NoAttrs.
std::string attrs_to_string(const Attrs& attrs);

}  // namespace tessera::graph
