#pragma once
// 2-D pooling over NCHW or NHWC data, or NCHW[x]c (N, C/x, H, W, x: the channel
// block passes through, so a schedule can vectorise it).
//   max_pool2d:        [pad_temp (lowest float)] -> tensor (max, tag "pool_max")
//   avg_pool2d:        [pad_temp (0)] -> tensor (sum, tag "pool_sum") -> tensor_1 (divide, tag "pool_avg")
//   global_avg_pool2d: tensor (sum over H, W, tag "global_pool_sum") -> tensor_1 (divide, tag "global_pool_avg")
#include <map>
#include <string>

#include "ir/tensor.h"
#include "ops/common.h"

namespace tessera::ops {

// The attributes of max_pool2d and avg_pool2d: one struct for graph nodes,
// the interpreter, compile and the declarations below.
struct Pool2dAttrs {
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  // Output extent rounds up (PyTorch/ONNX ceil_mode); a window must still
  // start inside the input or the leading padding. The declarations take it
  // as extra trailing padding (with_ceil_padding).
  bool ceil_mode = false;
  // Average pooling only: whether padded positions count in the divisor.
  bool count_include_pad = false;
  // "NCHW", "NHWC" or channel-blocked "NCHW<x>c": H and W are axes 2 and 3 of
  // NCHW and NCHW<x>c (rank 5), axes 1 and 2 of NHWC.
  std::string layout = "NCHW";
  size_t h_axis() const { return layout == "NHWC" ? 1 : 2; }
  size_t w_axis() const { return layout == "NHWC" ? 2 : 3; }

  static Pool2dAttrs symmetric(int64_t kernel, int64_t stride, int64_t pad = 0, bool count_include_pad = false);
  bool has_padding() const { return pad_top || pad_left || pad_bottom || pad_right; }
  // Recorded in the output tensor's attrs (part of workload keys).
  std::map<std::string, std::string> to_attrs() const;
  // "pool_size=[3, 3] strides=[2, 2] padding=[1, 1, 1, 1] layout=NCHW ..."
  std::string to_string() const;
};

// ceil_mode as extra bottom / right padding that completes the last window,
// given the data and output shapes: exact for max pooling (padding never
// wins) and for averages that do not count padding (shape inference refuses
// ceil_mode with count_include_pad). ceil_mode is cleared.
Pool2dAttrs with_ceil_padding(const Pool2dAttrs& attrs, const Shape& data, const Shape& out);

// The attributes of global_avg_pool2d.
struct GlobalPoolAttrs {
  std::string layout = "NCHW";  // or "NHWC", or "NCHW<x>c"
  std::string to_string() const { return "layout=" + layout; }
};

// Output extent of a pooling window along one axis, PyTorch's rule: floor (or
// ceil with ceil_mode) of (in + pads - kernel) / stride, plus one, where in
// ceil mode the last window must start inside the input or leading padding.
int64_t pool_output_extent(int64_t in, int64_t pad_before, int64_t pad_after, int64_t kernel, int64_t stride,
                           bool ceil_mode);

// Validates data (rank 4, or 5 for NCHW[x]c; NHWC: rank 4) and attrs (positive kernel/stride; each padding
// smaller than the kernel, so every window sees at least one input element).
Shape pool2d_output_shape(const std::string& op, const Shape& data, const Pool2dAttrs& attrs);

ir::Tensor max_pool2d(const ir::Tensor& data, const Pool2dAttrs& attrs);
ir::Tensor avg_pool2d(const ir::Tensor& data, const Pool2dAttrs& attrs);
// (N, C, H, W) -> (N, C, 1, 1); nhwc: (N, H, W, C) -> (N, 1, 1, C)
// data: NCHW, NHWC (nhwc) or channel-blocked NCHW[x]c (rank 5).
ir::Tensor global_avg_pool2d(const ir::Tensor& data, bool nhwc = false);

}  // namespace tessera::ops
