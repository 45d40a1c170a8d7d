// Per-store features: one fixed-length, finite, deterministic vector per
// store, and the values a reader can work out by hand for a plain dense loop
// nest (i, j, k over 64 x 48 x 32) and a tiled, annotated one.
#include "features/store_features.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ops/workloads.h"
#include "tir/lower.h"

namespace tessera::features {
namespace {

constexpr int kBuffers = kComputeFeatures;  // first feature of the buffer group
constexpr int kScope = kComputeFeatures + kStoreBuffers * kPerStoreBuffer + kIntensitySamples + kAllocationFeatures;

float lg2(double x) { return static_cast<float>(std::log2(1.0 + x)); }

std::vector<std::vector<float>> features(const schedule::Trace& trace) {
  const ops::Workload w = ops::dense_workload({64, 32}, {48, 32});
  return store_features(tir::lower(w.dag, trace));
}

// The store executed most often: the reduction's update.
std::vector<float> update_store(const std::vector<std::vector<float>>& stores) {
  return *std::max_element(stores.begin(), stores.end(),
                           [](const auto& a, const auto& b) { return a[kScope] < b[kScope]; });
}

TEST(StoreFeatures, OneFixedLengthFiniteVectorPerStore) {
  const auto a = features(schedule::Trace()), b = features(schedule::Trace());
  ASSERT_EQ(a.size(), 2u);  // the reduction's init and update
  for (const auto& v : a) {
    EXPECT_EQ(v.size(), static_cast<size_t>(kStoreFeatureLength));
    for (float x : v) EXPECT_TRUE(std::isfinite(x));
  }
  EXPECT_EQ(a, b);
}

TEST(StoreFeatures, PlainDenseNestByHand) {
  const auto u = update_store(features(schedule::Trace()));
  const double iters = 64.0 * 48 * 32;
  EXPECT_FLOAT_EQ(u[0], lg2(iters));  // one add per iteration
  EXPECT_FLOAT_EQ(u[1], lg2(iters));  // one multiply
  EXPECT_FLOAT_EQ(u[2], 0);           // no division
  EXPECT_FLOAT_EQ(u[kScope], lg2(iters));
  EXPECT_FLOAT_EQ(u[kScope + 1], 3);  // i, j, k
  // Slot 0: T_dense, written and read (an accumulator), reused across k
  // (the innermost loop that does not index it): distance 1 iteration, count 32.
  const float* out = u.data() + kBuffers;
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[1], 1);
  EXPECT_FLOAT_EQ(out[3], lg2(64 * 48 * 4));  // distinct bytes
  EXPECT_EQ(out[6], 1);
  EXPECT_FLOAT_EQ(out[9], lg2(1));
  EXPECT_FLOAT_EQ(out[11], lg2(32));
  EXPECT_FLOAT_EQ(out[12], lg2(0));  // stride 0 along k
  // Slot 1: data[i, k] (8 KiB, more than the weight's 6 KiB): stride 1 along
  // k, reused across j: one k loop (32 iterations) between uses.
  const float* data = out + kPerStoreBuffer;
  EXPECT_EQ(data[0], 0);
  EXPECT_EQ(data[1], 1);
  EXPECT_FLOAT_EQ(data[3], lg2(64 * 32 * 4));
  EXPECT_FLOAT_EQ(data[12], lg2(1));
  EXPECT_FLOAT_EQ(data[9], lg2(32));
  // Slot 2: weight[j, k], reused across i: a whole j, k sweep between uses.
  const float* weight = out + 2 * kPerStoreBuffer;
  EXPECT_FLOAT_EQ(weight[3], lg2(48 * 32 * 4));
  EXPECT_FLOAT_EQ(weight[9], lg2(48 * 32));
  EXPECT_FLOAT_EQ(weight[11], lg2(64));
  // No fourth buffer.
  for (int k = 0; k < kPerStoreBuffer; ++k) EXPECT_EQ(out[3 * kPerStoreBuffer + k], 0);
}

TEST(StoreFeatures, LoopAnnotationsAreCounted) {
  schedule::Trace t;
  t.split("T_dense", "j", {8}).split("T_dense", "i", {4});
  t.reorder("T_dense", {"i.0", "j.0", "k", "i.1", "j.1"});
  t.vectorize("T_dense", "j.1").parallel("T_dense", "i.0");
  const auto u = update_store(features(t));
  EXPECT_FLOAT_EQ(u[6], lg2(8));   // vectorized extent
  EXPECT_EQ(u[7], 1);
  EXPECT_EQ(u[8], 1);              // the innermost loop is the vector loop
  EXPECT_FLOAT_EQ(u[12], lg2(16));  // parallel extent: 64 / 4
  EXPECT_EQ(u[13], 1);
  EXPECT_EQ(u[14], 0);
  EXPECT_NE(u, update_store(features(schedule::Trace())));
}

}  // namespace
}  // namespace tessera::features
