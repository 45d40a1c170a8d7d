#pragma once
// The sketch rules for GPUs (cuda, opencl), in the order they are tried at
// each stage (sketch_rule.h). Read as a spec:
//  1. AlwaysInline: an elementwise stage that is not an output is inlined
//     (as on CPUs).
//  2. CrossThreadReduction: a reduction without reuse whose outputs are too
//     few to fill the GPU one thread each (schedule::kCrossThreadMaxOutputs,
//     kCrossThreadMinReduce, as the hand-written schedule decides) (a row's max or sum, a norm's
//     mean) has its reduce loops fused and split (threads, per-thread
//     length); its outputs are the blocks, and each block's threads reduce
//     one output together (partial results in registers, then a tree in
//     shared memory: tir/lower.h). Both with and without.
//  3. TensorCoreTiling (CUDA, sm_80 and later): a matrix product whose
//     operands are fp16 values (half-storage inputs, or copies of them), or
//     fp32 ones on a target that allows TF32 (target.h, "-tf32"), and
//     whose rows, columns and reduction are multiples of 16 (dense,
//     batch_matmul) is also tiled for tensor cores: rows and columns split
//     (block, warp, fragment, 16), the reduction (step, sub-step, 16); each
//     warp accumulates its fragments' 16 x 16 tiles in a "fragment" cache
//     stage (mma.sync with fp32 accumulation), per step of the reduction
//     from both operands fetched into shared memory by the whole block (in
//     half: the values are halves, and mma.sync reads their bits; TF32's
//     in fp32, rounded as the fragments are loaded), each lane copying one
//     element or (a choice per operand) 16 bytes; the
//     warps then store their tiles into a shared copy of the block's
//     outputs, which the output stage (the product, or the elementwise
//     consumer it is fused into) writes out, 32 lanes by the warps.
//     Blocks are 32 threads along x (a warp's lanes) by the warps along y.
//     The reduction's step is a pipeline site (as in rule 6).
//     The rules after it derive their sketches too; the search measures both.
//  4. SplitK: a stage that needs multi-level tiling, whose outputs are few
//     enough that its tiles may not fill the GPU (fewer than
//     kSplitKMaxOutputs) and whose reduction is long, also gets sketches
//     with its first reduce axis cut into ranges (split-K, a by-range
//     rfactor; split_k_ranges says how many). The partial sums are a stage
//     of their own, which the rules after it tile as they would the stage
//     (on tensor cores too, the ranges a batch); the stage then adds each
//     output's partial sums in the thread that writes it out (its
//     elementwise consumer's, or the convolution images'), one output per
//     thread. The rules after it derive their sketches too: the search
//     measures split and whole. The partial sums themselves are always
//     tiled (on tensor cores, or by the next two rules; AddCacheWrite is no
//     choice for them): one thread per partial sum would undo the split.
//  5. AddCacheWrite: a stage that needs multi-level tiling and has no
//     elementwise consumer to fuse into gets a local accumulator stage
//     (as on CPUs; on a GPU "local" is the thread's registers), which the
//     next rule tiles inside the copy-out's threads.
//  6. GpuMultiLevelTiling: a stage that needs multi-level tiling and has
//     one elementwise consumer is tiled "SSRRSRS": every spatial axis
//     split in 4 (block, thread, and two levels in the thread's registers),
//     every reduce axis in 3, ordered S0 | S1 | R0 R1 S2 R2 S3. The
//     consumer is split along the same lengths, its block parts fused and
//     bound to blockIdx.x, its thread parts fused and bound to threadIdx.x;
//     the stage is computed in the consumer's thread loop. Every input is
//     fetched cooperatively into shared memory per step of R0: the copy's
//     loops fused, split by the block's thread count, bound to threadIdx.x,
//     each thread copying one element or 4 consecutive ones (a choice).
//     The step (R0's innermost part) is a pipeline site: a choice to load
//     the next step's fetches while this one computes, in registers live
//     across the compute (tir/pipeline_fetches.h).
//  7. SkipStage: anything else keeps its loops; its spatial loops are
//     fused and spread one output element per thread over blocks of whole
//     warps (generate_sketches.h, the plain GPU stage).
// The GPU verifier (tir/verify_gpu.h) refuses, before any build, the
// candidates whose block holds too many threads or shared bytes.
#include "autoschedule/cpu_sketch_rules.h"

namespace tessera::autoschedule {

class CrossThreadReduction : public SketchRule {
 public:
  std::string name() const override { return "cross-thread-reduction"; }
  Condition condition(const SketchContext&, const SketchBuilder& b, int stage) const override;
  std::vector<std::pair<SketchBuilder, int>> apply(const SketchContext&, const SketchBuilder& b, int stage) const override;
};

class TensorCoreTiling : public SketchRule {
 public:
  std::string name() const override { return "tensor-core-tiling"; }
  Condition condition(const SketchContext& ctx, const SketchBuilder& b, int stage) const override;
  std::vector<std::pair<SketchBuilder, int>> apply(const SketchContext&, const SketchBuilder& b, int stage) const override;
};

// SplitK's partial sums get their accumulator unconditionally (AddCacheWrite,
// and no other rule at that stage).
class AddCacheWriteToPartialSums : public AddCacheWrite {
 public:
  std::string name() const override { return "add-cache-write-to-partial-sums"; }
  Condition condition(const SketchContext&, const SketchBuilder& b, int stage) const override;
};

inline constexpr int64_t kSplitKMaxOutputs = int64_t{1} << 20;  // 256 blocks of 64 x 64
class SplitK : public SketchRule {
 public:
  std::string name() const override { return "split-k"; }
  Condition condition(const SketchContext&, const SketchBuilder& b, int stage) const override;
  std::vector<std::pair<SketchBuilder, int>> apply(const SketchContext& ctx, const SketchBuilder& b,
                                                   int stage) const override;
};
// The range counts SplitK cuts a reduction of `reduce` products per output
// into, whose first reduce axis has `extent` iterations: largest first;
// none when no split keeps kMinPartialReduce products a partial sum.
std::vector<int64_t> split_k_ranges(int64_t extent, int64_t reduce);

class GpuMultiLevelTiling : public SketchRule {
 public:
  std::string name() const override { return "gpu-multi-level-tiling"; }
  Condition condition(const SketchContext&, const SketchBuilder& b, int stage) const override;
  std::vector<std::pair<SketchBuilder, int>> apply(const SketchContext&, const SketchBuilder& b, int stage) const override;
};

SketchRules gpu_sketch_rules();

// Whether TensorCoreTiling made `sketch` (its product tiled for tensor cores).
bool is_tensor_core_sketch(const Sketch& sketch);
// Whether SplitK made `sketch` (a reduction cut into ranges).
bool is_split_k_sketch(const Sketch& sketch);

}  // namespace tessera::autoschedule
