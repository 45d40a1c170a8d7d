#pragma once
// The GPU schedule templates (targets cuda and opencl: kind "gpu" in the
// registry; the tensor-core ones kind "cuda"), one family per file in this
// folder; template.cc registers them.
#include "autotvm/template.h"
#include "schedule/gpu_schedule.h"

namespace tessera::autotvm::gpu {

Template dense_template();         // "dense.gpu": schedule::gpu_matmul_schedule's tiles as knobs
Template batch_matmul_template();  // "batch_matmul.gpu": the same for the batched product
Template conv2d_nchw_template();   // "conv2d_nchw.gpu": schedule::gpu_conv2d_schedule's tiles as knobs
Template depthwise_conv2d_nchw_template();  // "depthwise_conv2d_nchw.gpu": gpu_depthwise_schedule's tiles
Template conv2d_nchw_winograd_template();   // "conv2d_nchw_winograd.gpu": gpu_winograd_schedule's product tiles
// "conv2d_nchw_implicit_gemm.gpu", "conv2d_nhwc_implicit_gemm.gpu": a
// convolution as one product (ops/conv2d_implicit_gemm.h), the dense knobs
Template conv2d_nchw_implicit_gemm_template();
Template conv2d_nhwc_implicit_gemm_template();
// The same products in half storage on CUDA's tensor cores (sm_80+):
// "dense_tensorcore.cuda", "batch_matmul_tensorcore.cuda",
// "conv2d_nchw_implicit_gemm_tensorcore.cuda",
// "conv2d_nhwc_implicit_gemm_tensorcore.cuda" (tensor_core.cc).
Template dense_tensor_core_template();
Template batch_matmul_tensor_core_template();
Template conv2d_nchw_implicit_gemm_tensor_core_template();
Template conv2d_nhwc_implicit_gemm_tensor_core_template();

// The knobs of a tiled matrix product (M x N, reduced over K), shared by the
// product templates: tile_y and tile_x split M and N into blocks x threads x
// outputs per thread, tile_k K into steps x elements staged per step;
// auto_unroll_max_step; pipeline_fetches. And the plan a config of them
// gives (pipeline_fetches aside: with_pipeline_knob applies it).
void define_matmul_space(ConfigSpace& s, int64_t m, int64_t n, int64_t k);
schedule::GpuMatmulPlan matmul_plan_of(const ConfigEntity& c);

// pipeline_fetches, a knob of the templates whose steps fetch into shared
// memory: 1 loads the next step's fetches while one computes. Added after
// records of those templates were written: a record without it reads 0.
void define_pipeline_knob(ConfigSpace& s);
// `trace` with its steps pipelined (schedule/pipelined_steps.h) where the
// config's pipeline_fetches is 1.
schedule::Trace with_pipeline_knob(schedule::Trace trace, const ConfigEntity& c);

}  // namespace tessera::autotvm::gpu
