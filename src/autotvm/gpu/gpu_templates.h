#pragma once
// The GPU schedule templates (targets cuda and opencl: kind "gpu" in the
// registry), one per file in this folder; template.cc registers them. The
// full GPU search spaces come with GPU tuning; these make tune-op --target
// cuda|opencl work end to end.
#include "autotvm/template.h"

namespace tessera::autotvm::gpu {

Template dense_template();         // "dense.gpu": schedule::gpu_matmul_schedule's tiles as knobs
Template batch_matmul_template();  // "batch_matmul.gpu": the same for the batched product
Template conv2d_nchw_template();   // "conv2d_nchw.gpu": schedule::gpu_conv2d_schedule's tiles as knobs
Template depthwise_conv2d_nchw_template();  // "depthwise_conv2d_nchw.gpu": gpu_depthwise_schedule's tiles

}  // namespace tessera::autotvm::gpu
