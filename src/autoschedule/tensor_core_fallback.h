#pragma once
// A half matrix product's tensor-core sketch (gpu_sketch_rules.h,
// TensorCoreTiling) with the numbers used where no record chose them: the
// tensor-core templates' fallback configuration, and the schedule a build
// runs untuned where it is faster than the hand-written CUDA-core tiles (so
// that the auto-scheduler, which measures the untuned schedule first, never
// records a kernel slower than the build would run it).
#include <optional>

#include "autoschedule/sketch.h"
#include "target/target.h"

namespace tessera::autoschedule {

// 2 x 2 warps (128 threads) where the tiles allow, each warp 2 x 2
// fragments (a block's tile 64 x 64), the reduction staged 32 deep a step
// (16 KB of shared memory for the block's outputs, 8 KB for the operands),
// a step's multiplications unrolled (auto_unroll_max_step 64: a step's 8 of
// them, not the steps; unrolling those too, 512, gave NVRTC 70 to 170 KB of
// source a kernel, and ResNet-18 in half took 90 s to compile instead of 3),
// operands read as stored rows (weights, dense inputs) and an NHWC
// convolution's window (8 channels of a pixel) fetched 16 bytes a lane,
// the others (an NCHW window) an element a lane.
struct TensorCoreFallback {
  Sketch sketch;
  SketchParams params;
  int64_t blocks = 0;   // the grid's blocks
  int64_t reduce = 0;   // the products each output adds, in the 16-multiple the tiles cover
  int64_t columns = 0;  // the product's columns (a convolution's output positions), likewise
};
// Nothing when `dag`'s product takes no tensor cores on `target` (CUDA
// sm_80+, fp16 operands or fp32 ones with TF32 allowed, sides in multiples
// of 16: TensorCoreTiling's condition), or when `dag` holds more than that
// one reduction (attention). A TF32 product takes the half
// one's numbers, and tensor_core_fallback_pays decides for it as for half,
// where it was measured; not yet for TF32, whose tensor cores do half
// fp16's multiply-adds a cycle from operands of twice the bytes.
std::optional<TensorCoreFallback> tensor_core_fallback(const ir::ComputeDAG& dag, const target::Target& target);

// Whether the fallback runs faster untuned than the hand-written CUDA-core
// tiles. It has no split-K: with few blocks, each reduces its whole K
// serially, a step at a time. So: when its blocks fill the GPU (at least
// schedule::kSplitReductionBlocks), or the reduction is short (at most
// kShortTensorCoreReduce products, where the CUDA-core tiles' staging
// outweighs their arithmetic), or there is a block per multiprocessor
// (kTensorCoreWaveBlocks) and a reduction of at most
// kMediumTensorCoreReduce. Fitted to every kernel of ResNet-18/50 and
// MobileNet-v2 at batch 1 and 16 measured both ways on an H200 (2026-11-28,
// bench/gpu/untuned_check.sh): the networks' kernels then take 1.00-1.02x
// the time of the faster side of each kernel (MobileNet-v2 at batch 1:
// 1.41x), where all on tensor cores took up to 3.1x (ResNet-18 at batch 1;
// its layer4 3x3 at 8 blocks, K = 4608, 12x the CUDA-core time) and all on
// CUDA cores up to 2.1x (ResNet-50 at batch 16). Also a narrow product (at
// most kNarrowTensorCoreColumns columns: a batch of one 14 x 14 image) whose
// reduction is at most kNarrowTensorCoreReduce: the CUDA-core tiles leave
// most of their threads idle there, and MobileNet-v2's 1x1 projections at
// 14 x 14 (K = 384, 576) took 0.20-0.36x their time on tensor cores.
inline constexpr int64_t kShortTensorCoreReduce = 256;
inline constexpr int64_t kTensorCoreWaveBlocks = 132;
inline constexpr int64_t kMediumTensorCoreReduce = 1024;
inline constexpr int64_t kNarrowTensorCoreColumns = 256;
inline constexpr int64_t kNarrowTensorCoreReduce = 640;
bool tensor_core_fallback_pays(const TensorCoreFallback& fallback);

// The schedule of `dag` without a record: the tensor-core fallback where it
// pays, else the hand-written one (tir/hand_written_schedule.h).
schedule::Trace untuned_schedule(const ir::ComputeDAG& dag, const target::Target& target);

}  // namespace tessera::autoschedule
