#pragma once
// One kernel for a depthwise 3x3 convolution and the 1x1 projection that reads
// it (MobileNet-v2's inverted-residual blocks): the depthwise output never
// reaches memory. graph::fuse_operators forms these kernels (FuseOptions);
// no template tunes them yet: the build uses this hand-written schedule.
//
// The output's flattened positions are cut into tiles of whole rows, one
// tile per iteration of the parallel loop. Inside it the depthwise output
// (with its epilogue) of those rows is computed for every channel into a
// buffer (rows x width x channels: 32 KB for 144 channels of one 56-wide
// row), then the projection runs over that buffer like the 1x1 schedule: per
// output-channel chunk and column tile, accumulators in registers across all
// input channels. The depthwise stage is attached above the projection's
// chunk loop, which only the projection (computed inside it) reads from:
// lowering infers its region through that reader.
//
// Measured by bench/fused_dw_1x1 (Zen 3, 1 thread, warm caches, fused /
// two kernels, noisy host): 144->24 at 56x56 0.74-0.92, 96->24 at 112x112
// stride 2 0.94-1.01, but 1.03-1.16 at 14x14 and 1.3 at 7x7, where the
// separate 1x1 schedule's buffered, multi-chunk register tiles win; the
// projection here keeps one chunk per register tile. Inside a network the
// two kernels pay more than warm: the intermediate goes through L3.
#include <cstdint>

#include "ir/compute_dag.h"
#include "schedule/trace.h"

namespace tessera::schedule {

struct DepthwiseProjectionPlan {
  int64_t rows = 1;          // output rows per tile of the parallel loop
  int64_t tile_ow = 14;      // projection: positions per register tile
  int64_t depthwise_ow = 8;  // depthwise: output columns per register tile
};

// Tiles of up to 4 rows: each channel plane is then read in runs of 6-9
// input rows that the hardware prefetcher follows; with one row per tile the
// depthwise hops across every plane after 3 rows. MobileNet-v2 at 1 thread
// (blocks of 56 rows and more fused, min of 8 interleaved runs): 4 rows 7.68
// ms, 2 rows 8.03, 8 rows 8.04, 14 rows 8.05; unfused 8.23.
DepthwiseProjectionPlan default_depthwise_projection_plan(const ir::ComputeDAG& dag);

// The DAG: data -> depthwise_conv2d_nchwc (3x3, its padding) -> elementwise
// epilogue (at least the bias) -> conv2d_nchwc 1x1 over flattened positions -> elementwise
// epilogue. Throws tessera::Error naming what is missing otherwise.
Trace depthwise_projection_trace(const ir::ComputeDAG& dag, const DepthwiseProjectionPlan& plan);

}  // namespace tessera::schedule
