// Loop features of lowered kernels: fixed length, finite, deterministic, and
// telling schedules apart; strides and reuse where they can be worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "features/loop_features.h"
#include "ops/workloads.h"
#include "tir/lower.h"

namespace tessera::features {
namespace {

// dense: T_dense[i, j] = sum_k data[i, k] * weight[j, k], 64 x 48 x 32.
ops::Workload dense() { return ops::dense_workload({64, 32}, {48, 32}); }

tir::LoweredFunc lowered(const schedule::Trace& trace) {
  ops::Workload w = dense();
  return tir::lower(w.dag, trace);
}

schedule::Trace tiled() {
  schedule::Trace t;
  t.split("T_dense", "j", {8}).split("T_dense", "i", {4});
  t.reorder("T_dense", {"i.0", "j.0", "k", "i.1", "j.1"});
  t.vectorize("T_dense", "j.1").unroll("T_dense", "i.1").parallel("T_dense", "i.0");
  return t;
}

bool all_finite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

TEST(Features, FixedLengthFiniteAndDeterministic) {
  for (const schedule::Trace& t : {schedule::Trace(), tiled()}) {
    std::vector<float> a = itervar_features(lowered(t)), b = itervar_features(lowered(t));
    std::vector<float> c = curve_features(lowered(t)), d = curve_features(lowered(t));
    EXPECT_EQ(a.size(), static_cast<size_t>(kItervarLength));
    EXPECT_EQ(c.size(), static_cast<size_t>(kCurveLength));
    EXPECT_TRUE(all_finite(a));
    EXPECT_TRUE(all_finite(c));
    EXPECT_EQ(a, b);  // lowering again makes new variables: same features
    EXPECT_EQ(c, d);
  }
}

TEST(Features, DifferBetweenSchedulesOfOneDag) {
  EXPECT_NE(itervar_features(lowered(schedule::Trace())), itervar_features(lowered(tiled())));
  EXPECT_NE(curve_features(lowered(schedule::Trace())), curve_features(lowered(tiled())));
}

TEST(Features, CurveLengthDoesNotDependOnTheNest) {
  ops::Workload conv =
      ops::conv2d_nchwc_workload({1, 2, 8, 8, 8}, {2, 2, 3, 3, 8, 8}, ops::Conv2dAttrs::symmetric(1, 1));
  EXPECT_EQ(curve_features(tir::lower(conv.dag, schedule::Trace())).size(), static_cast<size_t>(kCurveLength));
  EXPECT_EQ(itervar_features(tir::lower(conv.dag, schedule::Trace())).size(), static_cast<size_t>(kItervarLength));
}

// Untiled dense: loops i, j, k with k innermost. Under k the output element is
// fixed (stride 0, one element reused 32 times) and both inputs walk with stride 1.
TEST(Features, InnermostLoopStridesAndReuseOfPlainDense) {
  std::vector<float> f = itervar_features(lowered(schedule::Trace()));
  EXPECT_FLOAT_EQ(f[0], std::log2(1.0f + 64 * 48 * 32));  // iterations of the main nest
  const float* k = f.data() + kItervarHeader;             // innermost loop first
  EXPECT_EQ(k[0], 1);                                     // present
  EXPECT_FLOAT_EQ(k[1], std::log2(33.0f));                // extent 32
  EXPECT_EQ(k[2], 1);                                     // serial
  EXPECT_FLOAT_EQ(k[6], std::log2(1.0f + 64 * 48));       // loops outside k
  int written = 0;
  for (int b = 0; b < kBufferSlots; ++b) {
    const float* q = k + 7 + b * kPerBuffer;
    if (q[4] == 1) {  // T_dense
      ++written;
      EXPECT_EQ(q[0], 0);                       // stride 0
      EXPECT_FLOAT_EQ(q[2], std::log2(5.0f));   // 4 bytes touched
      EXPECT_FLOAT_EQ(q[3], std::log2(33.0f));  // 32 accesses of one element
    } else {
      EXPECT_FLOAT_EQ(q[0], 1);                         // log2(1 + stride 1)
      EXPECT_FLOAT_EQ(q[2], std::log2(1.0f + 32 * 4));  // a row of 32 floats
    }
  }
  EXPECT_EQ(written, 1);
}

TEST(Features, AnnotationsShowInTheLoopKinds) {
  std::vector<float> f = itervar_features(lowered(tiled()));
  const float* inner = f.data() + kItervarHeader;  // j.1, vectorized
  EXPECT_EQ(inner[4], 1);
  const float* next = inner + kPerLoop;  // i.1, unrolled
  EXPECT_EQ(next[5], 1);
}

}  // namespace
}  // namespace tessera::features
