#pragma once
// The operators the CLI can tune by name, and their arguments as one flat struct
// that command-line flags map onto one to one.
#include <string>
#include <vector>

#include "ops/common.h"
#include "ops/workload.h"

namespace tessera::ops {

struct OpArgs {
  // Main operand. conv2d / depthwise_conv2d / pools: NCHW (always, whatever the
  // layout); dense: (M, K); batch_matmul: (B, M, K); other ops: any shape.
  Shape input;
  // Second operand. conv2d: OIHW (always); depthwise_conv2d: (C, multiplier, KH, KW);
  // dense: (N, K); batch_matmul: (B, N, K); add / multiply: the right-hand side,
  // empty = same shape as input.
  Shape weight;
  int64_t stride = 1, pad = 0, dilation = 1;
  // Optional explicit padding, overriding `pad`: {h, w} or {top, left, bottom, right}.
  Shape padding;
  // conv2d only: "NCHW", "NHWC" (placeholders NHWC data and HWIO kernel) or
  // "NCHWc" (placeholders packed by pack_nchw_to_nchwc / pack_oihw_to_oihwio).
  // depthwise_conv2d: "NCHW" or "NCHWc" (one block for data and output; weight packed
  // by pack_depthwise_weight; multiplier 1 only).
  // dense: "NK" (the default "NCHW" means the same) or "packed" (weight (N/bn, K, bn),
  // bn = oc_bn or dense_pack_block(N)).
  std::string layout = "NCHW";
  int64_t ic_bn = 0, oc_bn = 0;  // NCHWc blocks; 0 = largest of 16, 8, 4, 2, 1 dividing the channels
  // group_conv2d: the groups (weight (O, C/groups, KH, KW)); layout NCHW or
  // NCHWc, whose blocks divide the channels of one group.
  int64_t groups = 1;
  bool bias = false, relu = false;  // epilogue of conv2d, depthwise_conv2d, dense
  int64_t pool = 2;                 // pooling window (square); pools use `stride` and `pad` too
  bool count_include_pad = false;   // avg_pool
  float clip_min = 0.0f, clip_max = 6.0f;  // clip
  size_t axis = 1;                  // bias_add: the channel axis of input
  // conv2d_winograd (blocked like NCHWc, 3x3, stride 1) and
  // conv2d_nchw_winograd (NCHW): the output tile m of F(m x m, 3 x 3), 2 or 4
  // (ops/winograd.h).
  int64_t winograd_tile = 4;
  // Every op: how its arguments are stored. "float16": in half precision,
  // the arithmetic in fp32 (ir/half_storage.h; GPU targets).
  std::string dtype = "float32";
};

// conv2d, conv2d_winograd, conv2d_nchw_winograd (GPU targets), group_conv2d, depthwise_conv2d, dense, batch_matmul, max_pool, avg_pool,
// global_avg_pool, softmax, relu, clip, add, multiply, bias_add; and every
// operator of the registry (ops/operator.h) that takes one input (sigmoid,
// hard_swish, ...), declared with its default attributes. Sorted.
std::vector<std::string> op_names();
// The OpArgs fields (by their names in OpArgs) that `op` takes; the others
// mean nothing to it. Throws tessera::Error for an unknown op.
const std::vector<std::string>& op_arg_fields(const std::string& op);
// Throws tessera::Error for an unknown op (listing the valid names) or bad arguments.
Workload make_workload(const std::string& op, const OpArgs& args);

// conv2d / depthwise_conv2d in layout NCHWc: blocks left 0 in args become the
// largest power of two up to `vector_lanes` dividing the channels (what a
// target's vector holds), so that make_workload declares them for the target.
OpArgs with_vector_blocks(const std::string& op, const OpArgs& args, int64_t vector_lanes);

// conv2d with layout NCHWc: the blocks make_workload uses (0s in args resolved).
struct NchwcBlocking {
  int64_t ic_bn = 1, oc_bn = 1;
};
NchwcBlocking nchwc_blocking(const OpArgs& args);

// conv2d: NCHW data / OIHW weight (args.input / args.weight shapes) converted to
// the placeholders' layout for args.layout, and the output back to NCHW.
std::vector<float> conv2d_data_to_layout(const OpArgs& args, const float* nchw);
std::vector<float> conv2d_weight_to_layout(const OpArgs& args, const float* oihw);
std::vector<float> conv2d_output_to_nchw(const OpArgs& args, const float* output);

}  // namespace tessera::ops
