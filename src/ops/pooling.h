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

struct Pool2dAttrs {
  int64_t kernel_h = 2, kernel_w = 2;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  // Average pooling only: whether padded positions count in the divisor.
  bool count_include_pad = false;
  // Where the window slides: H and W are axes 2 and 3 of NCHW and of
  // NCHW[x]c (rank 5), axes 1 and 2 of NHWC.
  bool nhwc = false;
  size_t h_axis() const { return nhwc ? 1 : 2; }
  size_t w_axis() const { return nhwc ? 2 : 3; }

  static Pool2dAttrs symmetric(int64_t kernel, int64_t stride, int64_t pad, bool count_include_pad = false);
  bool has_padding() const { return pad_top || pad_left || pad_bottom || pad_right; }
  std::map<std::string, std::string> to_attrs() const;
};

// Validates data (rank 4, or 5 for NCHW[x]c; NHWC: rank 4) and attrs (positive kernel/stride; each padding
// smaller than the kernel, so every window sees at least one input element).
Shape pool2d_output_shape(const std::string& op, const Shape& data, const Pool2dAttrs& attrs);

ir::Tensor max_pool2d(const ir::Tensor& data, const Pool2dAttrs& attrs);
ir::Tensor avg_pool2d(const ir::Tensor& data, const Pool2dAttrs& attrs);
// (N, C, H, W) -> (N, C, 1, 1); nhwc: (N, H, W, C) -> (N, 1, 1, C)
// data: NCHW, NHWC (nhwc) or channel-blocked NCHW[x]c (rank 5).
ir::Tensor global_avg_pool2d(const ir::Tensor& data, bool nhwc = false);

}  // namespace tessera::ops
