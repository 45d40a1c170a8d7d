#pragma once
// A quantized 2-D convolution in the layouts of a GEMM accelerator (VTA's
// conv2d_packed): batch and channels cut into the core's blocks,
//
//   data   (N/bn, C/bi, H, W, bn, bi)   int8   ("NCHW1n16c" with bn = 1, bi = 16)
//   weight (O/bo, C/bi, KH, KW, bo, bi) int8   (each [bo][bi] block one GEMM tile)
//   output (N/bn, O/bo, OH, OW, bn, bo) int8
//
// computed as the accelerator does, in 32-bit two's-complement arithmetic
// (sums wrap, as the hardware's do):
//
//   acc = sum_{c,ky,kx} data[n, c, y*s - p + ky, x*s - p + kx] * weight[f, c, ky, kx]   (zero outside)
//   acc += bias[f]                                  when `bias` (int32, one per output channel)
//   acc = (acc + 2^(shift-1)) >> shift              arithmetic; rounds halves up (no rounding when shift = 0)
//   acc = min(max(acc, clip_min), clip_max)
//   acc = min(max(acc + residual[n, f, y, x], residual_clip_min), residual_clip_max)
//                                                   when `residual` (int8, the output's packed shape:
//                                                   a residual block's shortcut, added at the same scale)
//   out = acc                                       stored as int8
//
// which is a convolution with a power-of-two requantisation (the seed's
// global_scale quantisation; ops/requantize.h's power_of_two) and the
// residual add after it: every step is one of the accelerator's ALU
// operations, so the compiled program equals this reference bit for bit.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ops/common.h"

namespace tessera::ops {

struct Conv2dPackedAttrs {
  // The convolution, in unpacked sizes (channels and batch are multiples of the blocks).
  int64_t batch = 1, in_channels = 16, height = 1, width = 1, out_channels = 16;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t block_batch = 1, block_in = 16, block_out = 16;
  // The epilogue above.
  bool bias = false;
  int shift = 0;  // 0..15: the rounding term is an ALU immediate (16 bits, signed)
  int32_t clip_min = -128, clip_max = 127;
  bool residual = false;
  int32_t residual_clip_min = -128, residual_clip_max = 127;

  int64_t out_height() const { return (height + 2 * pad_h - kernel_h) / stride_h + 1; }
  int64_t out_width() const { return (width + 2 * pad_w - kernel_w) / stride_w + 1; }
  Shape data_shape() const;    // (N/bn, C/bi, H, W, bn, bi)
  Shape weight_shape() const;  // (O/bo, C/bi, KH, KW, bo, bi)
  Shape output_shape() const;  // (N/bn, O/bo, OH, OW, bn, bo); also the residual's
  Shape bias_shape() const { return {out_channels}; }
  // Multiply-accumulates of one inference, and twice that in operations.
  int64_t macs() const;
  double flop() const { return 2.0 * static_cast<double>(macs()); }
  // Throws tessera::Error naming conv2d_packed: channels or batch not a
  // multiple of their block, a padding as wide as the kernel (a window
  // entirely outside the image), an empty output, a shift outside 0..15,
  // clip bounds (either pair) outside int8 or crossed.
  void validate() const;
  // "conv2d_packed data=[1, 4, 56, 56, 1, 16] weight=[8, 4, 3, 3, 16, 16] strides=(2, 2) padding=(1, 1) shift=8
  // clip=[0, 127]"
  std::string to_string() const;
};

// dense on the accelerator (dense_packed): y[n, m] = sum_k x[n, k] w[m, k],
// then the epilogue above, is the 1x1 convolution of a 1x1 image: data
// (N/bn, K/bi, 1, 1, bn, bi), weight (M/bo, K/bi, 1, 1, bo, bi), output
// (N/bn, M/bo, 1, 1, bn, bo). One program generator lowers both.
Conv2dPackedAttrs dense_packed_attrs(int64_t batch, int64_t in_features, int64_t out_features);

// The attributes as a tuning record's workload writes them ({"op":
// "conv2d_packed", "batch": 1, ...}), and back: throws tessera::Error naming
// a field that is missing or of the wrong type, or attributes that do not
// validate.
nlohmann::json conv2d_packed_to_json(const Conv2dPackedAttrs& attrs);
Conv2dPackedAttrs conv2d_packed_from_json(const nlohmann::json& j);

// The reference: `data`, `weight` as above (row-major); `bias` (out_channels)
// when attrs.bias and `residual` (the output's shape) when attrs.residual,
// else ignored (may be empty). Throws tessera::Error naming conv2d_packed
// for a tensor of the wrong size.
std::vector<int8_t> conv2d_packed_reference(const Conv2dPackedAttrs& attrs, const std::vector<int8_t>& data,
                                            const std::vector<int8_t>& weight, const std::vector<int32_t>& bias,
                                            const std::vector<int8_t>& residual);

}  // namespace tessera::ops
