// Calibration: the histogram keeps every count through its growth, and each
// method's range against an independent computation on the sorted values
// (min-max, percentile) or the property it exists for (kl-entropy clips
// rare outliers, keeps a uniform distribution whole).
#include "graph/calibration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "tessera/error.h"

namespace tessera::graph {
namespace {

std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(Calibration, HistogramGrowsByMergingBinsAndLosesNoCount) {
  ValueHistogram h(8);
  const std::vector<float> first = {0.1f, -0.2f, 0.3f, 0.4f};
  h.add(first.data(), 4);
  EXPECT_EQ(h.edge(), 0.4f);
  const std::vector<float> second = {1.5f, -1.0f, NAN};
  h.add(second.data(), 3);
  EXPECT_NEAR(h.edge(), 1.6, 1e-6);  // 0.4 doubled twice
  EXPECT_EQ(h.count(), 6);
  EXPECT_EQ(std::accumulate(h.bins().begin(), h.bins().end(), int64_t{0}), 6);
  EXPECT_EQ(h.min(), -1.0f);
  EXPECT_EQ(h.max(), 1.5f);
  // Bins of width 0.2 now: the first batch (merged twice) in the first two, 1.5 in the last.
  EXPECT_EQ(h.bins()[0] + h.bins()[1], 4);
  EXPECT_EQ(h.bins()[7], 1);
}

TEST(Calibration, MinMaxIsTheRangeSeenWithZeroInside) {
  ValueHistogram h;
  const std::vector<float> v = {0.5f, 2.0f, 3.25f};
  h.add(v.data(), 3);
  const ValueRange r = calibrated_range(h, {});
  EXPECT_EQ(r.lo, 0.0f);  // all positive: 0 stays representable
  EXPECT_EQ(r.hi, 3.25f);
  EXPECT_THROW(calibrated_range(ValueHistogram{}, {}), Error);
  EXPECT_THROW(calibration_method("entropy"), Error);
  EXPECT_EQ(to_string(calibration_method("kl-entropy")), "kl-entropy");
}

TEST(Calibration, PercentileMatchesTheSortedMagnitudesWithinABin) {
  ValueHistogram h;
  std::vector<float> all;
  for (uint32_t batch = 0; batch < 4; ++batch) {  // in batches, the edge growing
    const std::vector<float> v = gaussian(20000, batch, 1.0f + batch);
    h.add(v.data(), static_cast<int64_t>(v.size()));
    all.insert(all.end(), v.begin(), v.end());
  }
  std::vector<double> magnitudes;
  for (float x : all) magnitudes.push_back(std::fabs(x));
  std::sort(magnitudes.begin(), magnitudes.end());
  for (double pct : {50.0, 99.0, 99.99}) {
    const double want = magnitudes[static_cast<size_t>(std::ceil(pct / 100 * magnitudes.size())) - 1];
    const double width = h.edge() / static_cast<double>(h.bins().size());
    EXPECT_NEAR(percentile_threshold(h, pct), want, width) << pct;
  }
}

// A Gaussian with a few huge outliers: min-max spends its 127 levels on the
// outliers (the bulk within a handful of them); kl-entropy clips near the
// bulk's tail, well inside the outliers and beyond 2 sigma.
TEST(Calibration, KlEntropyClipsRareOutliersButNotTheBulk) {
  ValueHistogram h;
  std::vector<float> v = gaussian(100000, 7);
  for (int i = 0; i < 10; ++i) v.push_back(i % 2 ? 60.0f : -60.0f);
  h.add(v.data(), static_cast<int64_t>(v.size()));
  const double t = kl_entropy_threshold(h, 128);
  EXPECT_GT(t, 2.0);
  EXPECT_LT(t, 12.0);
  const ValueRange r = calibrated_range(h, {.method = CalibrationMethod::KlEntropy});
  EXPECT_NEAR(r.hi, t, 1e-5);
  EXPECT_NEAR(r.lo, -t, 1e-5);
}

TEST(Calibration, KlEntropyKeepsAUniformDistributionWhole) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  std::vector<float> v(100000);
  for (float& x : v) x = d(rng);
  ValueHistogram h;
  h.add(v.data(), static_cast<int64_t>(v.size()));
  EXPECT_GT(kl_entropy_threshold(h, 128), 0.9 * 4.0);
}

}  // namespace
}  // namespace tessera::graph
