#pragma once
// The GPU schedule templates (targets cuda and opencl: kind "gpu" in the
// registry; the tensor-core ones kind "cuda"), one family per file in this
// folder; template.cc registers them.
#include "autotvm/task.h"
#include "autotvm/template.h"
#include "schedule/gpu_schedule.h"

namespace tessera::autotvm::gpu {

Template dense_template();         // "dense.gpu": schedule::gpu_matmul_schedule's tiles as knobs
Template batch_matmul_template();  // "batch_matmul.gpu": the same for the batched product
Template conv2d_nchw_template();   // "conv2d_nchw.gpu": schedule::gpu_conv2d_schedule's tiles as knobs
Template depthwise_conv2d_nchw_template();  // "depthwise_conv2d_nchw.gpu": gpu_depthwise_schedule's tiles
Template conv2d_nchw_winograd_template();   // "conv2d_nchw_winograd.gpu": gpu_winograd_schedule's product tiles
// "conv2d_nchw_implicit_gemm.gpu": a convolution as one product, the dense knobs
Template conv2d_nchw_implicit_gemm_template();
// The same three products in half storage on CUDA's tensor cores (sm_80+):
// "dense_tensorcore.cuda", "batch_matmul_tensorcore.cuda",
// "conv2d_nchw_implicit_gemm_tensorcore.cuda" (tensor_core.cc).
Template dense_tensor_core_template();
Template batch_matmul_tensor_core_template();
Template conv2d_nchw_implicit_gemm_tensor_core_template();
// Whether `template_name` is one of those three.
bool is_tensor_core_template(const std::string& template_name);
// Whether a task of those templates runs faster untuned by its fallback
// configuration than by the hand-written CUDA-core tiles
// (build::BuildOptions::untuned_tensor_cores). The fallback has no split-K:
// with few blocks, each reduces its whole K serially, a step at a time. So:
// when its blocks fill the GPU (at least schedule::kSplitReductionBlocks),
// or the reduction is short (at most kShortTensorCoreReduce products, where
// the CUDA-core tiles' staging outweighs their arithmetic), or there is a
// block per multiprocessor (kTensorCoreWaveBlocks) and a reduction of at
// most kMediumTensorCoreReduce. Fitted to every kernel of ResNet-18/50 and
// MobileNet-v2 at batch 1 and 16 measured both ways on an H200 (2026-11-28,
// bench/gpu/untuned_check.sh): the networks' kernels then take 1.00-1.02x
// the time of the faster side of each kernel (MobileNet-v2 at batch 1:
// 1.41x), where all on tensor cores took up to 3.1x (ResNet-18 at batch 1;
// its layer4 3x3 at 8 blocks, K = 4608, 12x the CUDA-core time) and all on
// CUDA cores up to 2.1x (ResNet-50 at batch 16).
inline constexpr int64_t kShortTensorCoreReduce = 256;
inline constexpr int64_t kTensorCoreWaveBlocks = 132;
inline constexpr int64_t kMediumTensorCoreReduce = 1024;
bool tensor_core_fallback_pays(const Task& task);
// The fallback configuration's blocks and the products each output reduces.
struct TensorCoreFallbackShape {
  int64_t blocks, reduce;
};
TensorCoreFallbackShape tensor_core_fallback_shape(const Task& task);

// The knobs of a tiled matrix product (M x N, reduced over K), shared by the
// product templates: tile_y and tile_x split M and N into blocks x threads x
// outputs per thread, tile_k K into steps x elements staged per step;
// auto_unroll_max_step. And the plan a config of them gives.
void define_matmul_space(ConfigSpace& s, int64_t m, int64_t n, int64_t k);
schedule::GpuMatmulPlan matmul_plan_of(const ConfigEntity& c);

}  // namespace tessera::autotvm::gpu
