#pragma once
// The best hand-written schedules we know for the operators that matter most;
// the tuner's job is to beat them. Falls back to default_schedule.
#include <optional>

#include "schedule/dense_pack_tile.h"
#include "schedule/nchwc_tile.h"
#include "schedule/trace.h"

namespace tessera::schedule {

// conv2d NCHW[x]c: a register tile of output-channel blocks x output columns
// (nchwc_register_tile for the target's vector unit, unless `tile` is given)
// stays in vector registers across the whole reduction (cache_write +
// compute_at), the padding is materialised once, the outer loops run in
// parallel.
Trace conv2d_nchwc_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit,
                            std::optional<RegisterTile> tile = std::nullopt);

// The int8 blocked convolution (ops::qlinear_conv2d_nchwc): conv2d_nchwc's
// register tiles, each step of the reduction's innermost loops one byte dot
// product of the 4 input channels of a lane (annotation dot_product), the
// requantization written from the tile.
Trace qlinear_conv2d_nchwc_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit);
// Its register tile for the stage tagged qlinear_conv2d_nchwc: conv2d_nchwc's,
// with output chunks added until about a dozen accumulators hide the dot
// product's latency (the template's fallback too).
RegisterTile int8_register_tile(const ir::Tensor& conv, const VectorUnit& unit);

// dense with packed weights (schedule/dense_pack_tile.h): each thread owns
// tiles of dense_pack_tile weight blocks, whose accumulators stay in registers
// across the whole K loop.
Trace dense_pack_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit);
// The int8 one (ops::qlinear_dense_pack): dense_pack's register tiles, the 4
// bytes of each lane's step a byte dot product just outside the lanes.
Trace qlinear_dense_pack_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit);

// depthwise conv2d NCHW[x]c: a row of up to 8 output pixels x one channel
// vector held in registers across the kernel taps (the taps outside the row,
// the kernel width unrolled), padding computed once, outer loops parallel.
// The depthwise template's fallback config is this plan.
NchwcTilePlan depthwise_nchwc_plan(const ir::Tensor& conv);
Trace depthwise_nchwc_schedule(const ir::ComputeDAG& dag);
// Max or average pooling over NCHW[x]c data: the depthwise tiles.
Trace pool_nchwc_schedule(const ir::ComputeDAG& dag);
// Global average pooling over NCHW[x]c data: each block's sum in one vector.
Trace global_pool_nchwc_schedule(const ir::ComputeDAG& dag);

// Softmax or layer norm over the last axis: one row per parallel iteration,
// its reductions (softmax's maximum and sum, layer norm's sum and centred
// squares, each through a vector of partial results) and per-row values
// computed inside it (a row stays in cache), the full-width stages
// vectorized.
bool is_rows_operator(const ir::ComputeDAG& dag);
Trace rows_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit);

// Attention (ops/attention.cc): a tile of query rows per parallel
// iteration, their scores (vectors of keys, each serving every row),
// softmax and weighted values computed inside it; K transposed once before.
Trace attention_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit);

// The hand-written schedule of any DAG: by its main stage's tag (a depthwise
// + projection kernel when both convolutions are there), else the default.
Trace best_manual_schedule(const ir::ComputeDAG& dag, const VectorUnit& unit);

}  // namespace tessera::schedule
