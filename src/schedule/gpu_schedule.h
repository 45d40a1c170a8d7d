#pragma once
// Hand-written schedules for GPUs (blocks of threads, shared memory): what a
// network compiled for cuda or opencl runs when no record applies, and what
// the GPU tuner must beat.
#include <optional>

#include "schedule/trace.h"

namespace tessera::schedule {

// Any DAG: elementwise intermediates inlined (but for a copy into another
// layout, attrs "layout_copy", and one whose value calls a function, exp or
// tanh, and that a reduction reads several times an element: attention's
// transposed keys and probabilities); every other stage one kernel,
// its spatial loops fused and spread one output element per thread over
// blocks of up to `max_threads` threads (a reduction runs serially in its
// thread), except a reduction of few outputs (at most 16384) over at least
// 32 elements (softmax's and layer norm's rows, a global pool): a block per
// output, whose threads reduce it together. Correct for every operator,
// fast for the memory-bound ones.
Trace gpu_default_schedule(const ir::ComputeDAG& dag, int max_threads);
// Threads per block for `elements` outputs, one each: whole warps, at most
// `max_threads` and 256 (enough blocks per multiprocessor). The
// auto-scheduler's plain GPU stage uses the same.
int64_t gpu_block_threads(int64_t elements, int max_threads);
// A reduction of at most this many outputs leaves most of a GPU idle one
// thread each (132 multiprocessors x 2048 threads hold about 270,000)...
inline constexpr int64_t kCrossThreadMaxOutputs = 16384;
// ...and from this reduce length threads sharing one output pay (a warp's worth).
inline constexpr int64_t kCrossThreadMinReduce = 32;

// Blocks that keep a large GPU busy: two per multiprocessor of an H100 /
// H200 (132). A convolution or product of fewer output tiles (ResNet's last
// stages at batch 1: 32 to 56 blocks) splits its reduction until it has
// them...
inline constexpr int64_t kSplitReductionBlocks = 256;
// ...while every partial sum still adds at least this many products (a
// thread's 4 x 4 outputs then do 2048 multiply-adds for the 16 partial sums
// it writes), and into at most kMaxReductionSplit ranges (each adds a pass
// over the output through device memory).
inline constexpr int64_t kMinPartialReduce = 128;
inline constexpr int64_t kMaxReductionSplit = 16;
// The split of a reduction of `reduce` products per output over `blocks`
// blocks, into ranges of whole `granule`s of `divisible` (a convolution's
// input channels in steps): the least power of two that reaches
// kSplitReductionBlocks within the limits above, else the largest within
// them; 1 when the blocks are enough or no split fits.
int64_t reduction_split(int64_t blocks, int64_t reduce, int64_t divisible, int64_t granule);

// A matrix product stage (dense (M, N) = A (M, K) . W (N, K)^T, with W
// stored (N, K) or packed (N/bn, K, bn), or batch_matmul's (B, M, N)) of at
// least one tile (64 x 64 by default): each
// block computes a tile with 16 x 16 threads, each thread a 4 x 4 tile in
// registers; the block's slices of both operands are staged in shared
// memory, 8 along K at a time, each thread fetching its share. Elementwise
// consumers (bias, activation) run in the threads' epilogue. Nothing when
// the DAG holds no such product, or it is too small to fill one tile.
// The tile of that schedule: threads_y x threads_x threads per block, each
// computing rows x cols outputs, K staged step_k at a time (what the GPU
// dense template's knobs choose).
// With split_k > 1 (split-K), K is cut into split_k ranges whose partial
// sums are blocks of their own (along blockIdx.z, with the batch), written
// to a scratch buffer; a second kernel adds each output's partial sums and
// applies the epilogue, a thread per output.
struct GpuMatmulPlan {
  int64_t threads_y = 16, threads_x = 16, rows = 4, cols = 4, step_k = 8;
  int64_t split_k = 1;
  // auto_unroll_max_step on the accumulator: its inner loops unrolled while
  // their trip count stays within it (0: the register tiles alone).
  int64_t auto_unroll = 0;
};
// Whether `t` is a convolution's product (ops/conv2d_implicit_gemm.h):
// tags conv2d_nchw_gemm (channels x positions) and conv2d_nhwc_gemm
// (positions x channels).
bool is_conv_product(const ir::Tensor& t);
// Whether `operand` is an NHWC convolution's window (the columns (Q', K')
// of ops/conv2d_implicit_gemm.h) whose channels `lanes` divides: then
// `lanes` consecutive k from a multiple of `lanes` are one pixel's channels
// of one tap, contiguous and under one padding check, which a fetch may
// copy as one vector (the code generator still proves it of the loops, and
// copies element by element where it cannot).
bool nhwc_window_rows(const ir::Tensor& operand, int64_t lanes);
// The writer of a convolution's product `product`, an output with axes
// `axes` (NCHW: n f y x; NHWC: n y x f) over `batch` images, tiled as the
// product: its loops in `order`, the `positions` that index the product's
// positions in order fused, beside the `channels`. A batch of one stays
// outside them (its epilogue indexes it 0, which would leave the
// positions' digits without their highest: (y, x)); else (n, y, x). The
// product's rows are the channels in NCHW, the positions in NHWC
// (`positions_are_rows`).
struct ImagePositions {
  std::vector<std::string> order, positions;
  std::string channels;
  bool positions_are_rows = false;
};
ImagePositions image_positions(const ir::Tensor& product, const std::vector<std::string>& axes, int64_t batch);

std::optional<Trace> gpu_matmul_schedule(const ir::ComputeDAG& dag, int max_threads, const GpuMatmulPlan& plan = {});
// `plan` with split_k chosen for the DAG's product (reduction_split over the
// blocks of its tiles: BERT's products at batch 1 and sequence 128 are 24 to
// 96 tiles of 64 x 64); unchanged when the DAG holds none.
GpuMatmulPlan gpu_matmul_split(const ir::ComputeDAG& dag, GpuMatmulPlan plan);

// A direct NCHW convolution stage (conv2d_nchw: reduce axes rc, ry, rx) and
// its elementwise epilogue: each block computes a tile of output channels x
// rows x columns, each thread per_f channels x per_y rows x per_x columns in
// registers; per step of step_rc input channels the block stages the
// input's window (its padding computed as it is fetched) and the weights'
// slice in shared memory, every thread fetching its share.
// With split_rc > 1 (split-K) the input channels are cut into split_rc
// ranges whose partial sums are blocks of their own (blockIdx.z counts
// images x ranges x channel blocks), written to a scratch buffer; a second
// kernel adds each output's partial sums and applies the epilogue, a thread
// per output.
struct GpuConvPlan {
  int64_t threads_f = 8, threads_y = 4, threads_x = 8;  // threads per block: channels (threadIdx.z), rows, columns
  int64_t per_f = 4, per_y = 1, per_x = 1;              // outputs per thread
  int64_t step_rc = 8;                                  // input channels staged per step
  int64_t split_rc = 1;                                 // ranges of input channels summed apart
  int64_t auto_unroll = 0;                              // as GpuMatmulPlan's
  int64_t threads() const { return threads_f * threads_y * threads_x; }
};
// The plan for a convolution output (N, F, H, W) over C input channels of
// kh x kw taps: blocks of about 256 threads, the spatial threads dividing
// the rows and columns where they can, at least two blocks of channels,
// the channels split when the blocks are few (reduction_split, in steps).
GpuConvPlan gpu_conv_plan(const std::vector<int64_t>& out, int64_t channels, int max_threads, int64_t taps);
// The shared bytes a plan stages per step: the input window and the weights.
int64_t gpu_conv_shared_bytes(const GpuConvPlan& plan, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                              int64_t dilation_h, int64_t dilation_w);
// Nothing when the DAG holds no such convolution, holds another reduction,
// or the plan's block does not fit `max_threads` / `max_shared_bytes`.
std::optional<Trace> gpu_conv2d_schedule(const ir::ComputeDAG& dag, int max_threads, int64_t max_shared_bytes,
                                         const std::optional<GpuConvPlan>& plan = std::nullopt);

// A depthwise NCHW convolution (depthwise_conv2d_nchw) and its epilogue:
// blocks over images x channels (blockIdx.z) and tiles of rows x columns,
// threads of per_y x per_x outputs each, the window's taps in registers.
// No shared memory: neighbouring threads' windows overlap in the L1 cache.
struct GpuDepthwisePlan {
  int64_t threads_y = 4, threads_x = 16, per_y = 1, per_x = 1;
};
// Threads that divide the rows and columns where they can: 2..8 rows, 4..32 columns, at most 256 together.
GpuDepthwisePlan gpu_depthwise_plan(const std::vector<int64_t>& out);
std::optional<Trace> gpu_depthwise_schedule(const ir::ComputeDAG& dag, int max_threads,
                                            const std::optional<GpuDepthwisePlan>& plan = std::nullopt);

// A depthwise NHWC convolution (depthwise_conv2d_nhwc) and its epilogue:
// a block's threads run along the channels (threadIdx.x, consecutive
// threads consecutive channels of a pixel: the window's loads and the
// weights' coalesced) by `threads_x` columns (threadIdx.y); blocks over the
// channels' tiles, the columns' and (images, rows) (blockIdx.z); the taps
// unrolled in registers.
struct GpuDepthwiseNhwcPlan {
  int64_t threads_c = 32, threads_x = 8;
};
// Threads that divide the channels where they can (8..32) and the columns
// (1..8), at most 256 together.
GpuDepthwiseNhwcPlan gpu_depthwise_nhwc_plan(const std::vector<int64_t>& out);
std::optional<Trace> gpu_depthwise_nhwc_schedule(const ir::ComputeDAG& dag, int max_threads);

// A Winograd convolution in NCHW (ops/winograd.h: conv2d_winograd_nchw) and
// its epilogue, in three kernels: the input transform, a thread per
// (channel, tile) with its alpha^2 elements unrolled (the transform's select
// folds to each element's terms); the alpha^2 products tiled as
// gpu_matmul_schedule tiles a batch_matmul (output channels x tiles, the
// channels staged in shared memory step_k at a time, the products along
// blockIdx.z); the output transform with the epilogue, a thread per m x m
// output tile. Nothing when the DAG holds no such convolution or the
// products are smaller than one block's tile.
std::optional<Trace> gpu_winograd_schedule(const ir::ComputeDAG& dag, int max_threads, const GpuMatmulPlan& plan);
// A plan for the products: up to 16 x 16 threads of up to 4 x 4 outputs,
// the largest such tiles dividing the output channels and the tiles (a 28 x
// 28 image has 49 tiles of 4 x 4: 7 threads of one), fewer where they are
// few (a 7 x 7 image has 4).
GpuMatmulPlan gpu_winograd_plan(const ir::ComputeDAG& dag);

// Attention (ops/attention.h) in six kernels: the keys transposed; the
// scores (b, i, j) over the head's width; each key tile's maximum and sum,
// a block per row reducing it across its threads; the weighted values (b,
// i, t, c) over a key tile's keys, which compute the probabilities as they
// fetch them; and the output, whose threads combine their row's key tiles.
// Both products are tiled as gpu_matmul_schedule tiles a batch_matmul (the
// key tiles t a batch beside b), fewer outputs a thread while the blocks
// are few. Nothing when the DAG is not an attention.
std::optional<Trace> gpu_attention_schedule(const ir::ComputeDAG& dag, int max_threads);

// A DAG whose reductions all reduce the output's rows (its trailing axes,
// at least kCrossThreadMinReduce elements a row: softmax, layer norm) in
// one kernel of a block per row: each reduction's threads reduce it
// together into shared memory, which all of them then read, and the
// row's elements follow, consecutive threads consecutive elements; the
// elementwise stages inlined (softmax's exponentials computed twice, for
// the sum and the output, rather than written to memory and read back).
// Nothing for any other DAG.
std::optional<Trace> gpu_rows_schedule(const ir::ComputeDAG& dag, int max_threads);

// What a block may hold on the target (target::GpuLimits, as the schedules
// read it).
struct GpuBlockLimits {
  int max_threads = 1024;
  int64_t max_shared_bytes = 48 * 1024;
};

// The best of the above for a DAG.
Trace best_gpu_schedule(const ir::ComputeDAG& dag, const GpuBlockLimits& limits);

}  // namespace tessera::schedule
