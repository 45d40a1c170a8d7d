// GPU features of lowered kernels, against what the schedules make (threads,
// blocks, shared bytes counted by hand): zeros for a CPU kernel, the block
// and occupancy of the tiled convolution, and the bank conflict that the
// matrix product's per-thread columns make in its shared weight tile.
#include "features/gpu_features.h"

#include <gtest/gtest.h>

#include <cmath>

#include "features/access_analysis.h"
#include "features/loop_features.h"
#include "ops/registry.h"
#include "schedule/default_schedule.h"
#include "schedule/gpu_schedule.h"
#include "tir/lower.h"

namespace tessera::features {
namespace {

ops::Workload conv_28() {
  ops::OpArgs a;
  a.input = {1, 64, 28, 28};
  a.weight = {64, 64, 3, 3};
  a.pad = 1;
  return ops::make_workload("conv2d", a);
}

TEST(GpuFeatures, ACpuKernelHasNone) {
  const ops::Workload w = conv_28();
  const tir::LoweredFunc f = tir::lower(w.dag, schedule::default_schedule(w.dag));
  EXPECT_EQ(gpu_features(f), std::vector<float>(kGpuLength, 0.0f));
  // The loop features end with them.
  const std::vector<float> itervar = itervar_features(f);
  ASSERT_EQ(itervar.size(), static_cast<size_t>(kItervarLength));
  EXPECT_EQ(std::vector<float>(itervar.end() - kGpuLength, itervar.end()), std::vector<float>(kGpuLength, 0.0f));
}

TEST(GpuFeatures, TheTiledConvolutionsBlockAndOccupancy) {
  const ops::Workload w = conv_28();
  // One kernel: unsplit (split-K's second kernel would count its own blocks and threads).
  schedule::GpuConvPlan plan = schedule::gpu_conv_plan(w.dag.outputs()[0]->shape, 64, 1024, 9);
  plan.split_rc = 1;
  const tir::LoweredFunc f = tir::lower(w.dag, *schedule::gpu_conv2d_schedule(w.dag, 1024, 48 * 1024, plan));
  const std::vector<float> g = gpu_features(f);
  EXPECT_EQ(g[0], 1.0f);
  EXPECT_FLOAT_EQ(g[1], lg(7 * 4 * 8));                     // threads
  EXPECT_FLOAT_EQ(g[2], lg(4 * 7 * 2));                     // blocks
  EXPECT_FLOAT_EQ(g[4], lg(4 * (8 * 6 * 9 + 32 * 8 * 9)));  // shared bytes
  EXPECT_FLOAT_EQ(g[10], lg(4));                            // the thread's 4 accumulators
  EXPECT_FLOAT_EQ(g[8], lg(1));                             // threadIdx.x walks the output's columns
  // 224 threads of 36 registers: 8 blocks fit the registers (9 the threads, 15 the shared memory).
  EXPECT_FLOAT_EQ(g[9], 8 * 224 / 2048.0f);
  EXPECT_GT(g[5], 0.0f);                                   // shared loads per thread
  EXPECT_GT(g[6], 0.0f);                                   // device loads (the fetches) and stores per thread
  const std::vector<float> itervar = itervar_features(f);  // which end with them
  EXPECT_EQ(std::vector<float>(itervar.end() - kGpuLength, itervar.end()), g);
}

TEST(GpuFeatures, PerThreadColumnsReadTheSharedWeightsWithABankConflict) {
  ops::OpArgs a;
  a.input = {128, 64};
  a.weight = {128, 64};
  const ops::Workload w = ops::make_workload("dense", a);
  const tir::LoweredFunc f = tir::lower(w.dag, *schedule::gpu_matmul_schedule(w.dag, 1024));
  const std::vector<float> g = gpu_features(f);
  // weight_cache[x * 4 + j, k]: threadIdx.x steps 4 rows of 8 floats, 32
  // words: every thread of a row of the warp in one bank.
  EXPECT_FLOAT_EQ(g[7], 5.0f);
  EXPECT_FLOAT_EQ(g[1], lg(256));
  EXPECT_FLOAT_EQ(g[8], lg(4));  // the output's columns: 4 apart along threadIdx.x
}

}  // namespace
}  // namespace tessera::features
