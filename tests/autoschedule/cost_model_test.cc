// The per-store XGBoost model with the pack-sum loss ranks held-out
// candidates: trained on candidates whose cost is a known sum over their
// stores, it orders unseen candidates of the same DAG well; before training
// it scores everything 0, and failed measurements teach "slow".
#include "autoschedule/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "autoschedule/generate_sketches.h"
#include "autoschedule/random_annotation.h"
#include "features/store_features.h"
#include "ops/workloads.h"
#include "tir/lower.h"

namespace tessera::autoschedule {
namespace {

constexpr int kScope = features::kComputeFeatures + features::kStoreBuffers * features::kPerStoreBuffer +
                       features::kIntensitySamples + features::kAllocationFeatures;

// A cost the model can only learn store by store: each store costs its
// iterations divided by its vector extent.
double synthetic_cost(const StoreRows& rows) {
  double c = 0;
  for (const auto& r : rows) c += (std::exp2(r[kScope]) - 1) / std::exp2(r[6]);
  return c;
}

std::vector<StoreRows> random_candidates(int n, uint64_t seed) {
  const ops::Workload w = ops::dense_workload({16, 64}, {64, 64});
  const SketchContext ctx{target::Target::host(), 1};
  const auto sketches = generate_sketches(w.dag, ctx);
  std::mt19937_64 rng(seed);
  std::vector<StoreRows> out;
  for (int i = 0; i < n; ++i) {
    const Sketch& s = sketches[i % sketches.size()];
    out.push_back(features::store_features(tir::lower(w.dag, instantiate(s, random_params(s, ctx, rng)))));
  }
  return out;
}

double pairwise_accuracy(const std::vector<float>& scores, const std::vector<double>& costs) {
  int right = 0, pairs = 0;
  for (size_t a = 0; a < costs.size(); ++a)
    for (size_t b = a + 1; b < costs.size(); ++b) {
      if (std::abs(costs[a] - costs[b]) < 1e-9 * std::max(costs[a], costs[b])) continue;
      ++pairs;
      right += (scores[a] > scores[b]) == (costs[a] < costs[b]);
    }
  return pairs ? static_cast<double>(right) / pairs : 1.0;
}

TEST(XgbStoreCostModel, RanksHeldOutCandidates) {
  const auto train = random_candidates(200, 1), test = random_candidates(100, 2);
  XgbStoreCostModel model;
  EXPECT_EQ(model.predict(test), std::vector<float>(test.size(), 0.0f));
  std::vector<MeasuredCandidate> measured;
  for (const auto& rows : train) measured.push_back({"dense", rows, synthetic_cost(rows)});
  model.update(measured);
  ASSERT_TRUE(model.trained());
  std::vector<double> costs;
  for (const auto& rows : test) costs.push_back(synthetic_cost(rows));
  const double accuracy = pairwise_accuracy(model.predict(test), costs);
  EXPECT_GT(accuracy, 0.8) << "pairwise ranking accuracy on held-out candidates";
  // A random model is right about half the time: the bar above means something.
  RandomCostModel random(3);
  EXPECT_LT(pairwise_accuracy(random.predict(test), costs), 0.65);
}

TEST(XgbStoreCostModel, FailedMeasurementsScoreLow) {
  const auto c = random_candidates(40, 4);
  std::vector<MeasuredCandidate> measured;
  for (size_t i = 0; i < c.size(); ++i)
    measured.push_back({"dense", c[i], i % 2 ? std::numeric_limits<double>::infinity() : 1e-3});
  XgbStoreCostModel model;
  model.update(measured);
  const auto s = model.predict(c);
  double ok = 0, failed = 0;
  for (size_t i = 0; i < c.size(); ++i) (i % 2 ? failed : ok) += s[i];
  EXPECT_GT(ok, failed);
}

}  // namespace
}  // namespace tessera::autoschedule
