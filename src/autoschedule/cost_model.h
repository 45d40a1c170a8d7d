#pragma once
// What the evolutionary search asks of a cost model: learn from measured
// schedules, score unmeasured ones (higher = faster). A candidate is
// described by its per-store features (features/store_features.h): one row
// per store of its lowered kernel.
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace tessera::autoschedule {

using StoreRows = std::vector<std::vector<float>>;

struct MeasuredCandidate {
  std::string task;  // the workload key: throughputs are normalised per task
  StoreRows rows;
  double cost = 0;   // seconds; not finite or <= 0 for a failed measurement
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Adds measurements to what the model has learnt from (and retrains).
  virtual void update(const std::vector<MeasuredCandidate>& measured) = 0;
  virtual std::vector<float> predict(const std::vector<StoreRows>& candidates) = 0;
};

// Scores at random: the search without a model (ablations, tests).
class RandomCostModel : public CostModel {
 public:
  explicit RandomCostModel(uint64_t seed = 0) : rng_(seed) {}
  void update(const std::vector<MeasuredCandidate>&) override {}
  std::vector<float> predict(const std::vector<StoreRows>& candidates) override;

 private:
  std::mt19937_64 rng_;
};

struct XgbStoreModelOptions {
  int rounds = 60;
  int max_depth = 6;
  double eta = 0.2;
  int nthread = 1;  // the measurer needs the other core
  uint64_t seed = 0;
};

// Gradient-boosted trees scoring each store; a candidate's score is the sum
// of its stores' scores. Trained on every measurement so far with the
// "pack-sum" squared loss: (sum of a candidate's store scores - y)^2, where
// y is the task's best cost / the candidate's cost (1 for the best, 0 for a
// failure), so the model learns what each store contributes to a
// throughput that only the whole kernel's measurement reveals.
class XgbStoreCostModel : public CostModel {
 public:
  explicit XgbStoreCostModel(XgbStoreModelOptions options = {});
  ~XgbStoreCostModel() override;
  void update(const std::vector<MeasuredCandidate>& measured) override;
  // Before any training every candidate scores 0.
  std::vector<float> predict(const std::vector<StoreRows>& candidates) override;
  bool trained() const { return booster_ != nullptr; }
  size_t measurements() const { return data_.size(); }

 private:
  void retrain();

  struct Booster;
  XgbStoreModelOptions options_;
  std::vector<MeasuredCandidate> data_;
  std::unique_ptr<Booster> booster_;
};

}  // namespace tessera::autoschedule
