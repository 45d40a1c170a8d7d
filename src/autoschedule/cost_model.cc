#include "autoschedule/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "features/xgb_booster.h"
#include "tessera/error.h"

namespace tessera::autoschedule {

namespace {

bool valid_cost(double c) { return std::isfinite(c) && c > 0; }

// All store rows of `candidates`, row-major, and the candidate of each row.
std::vector<float> stack_rows(const std::vector<const StoreRows*>& candidates, std::vector<size_t>& owner,
                              size_t& cols) {
  std::vector<float> flat;
  owner.clear();
  cols = 0;
  for (size_t c = 0; c < candidates.size(); ++c)
    for (const auto& r : *candidates[c]) {
      if (owner.empty()) cols = r.size();
      if (r.size() != cols)
        throw Error("auto-scheduler cost model: store feature rows of different lengths (" +
                    std::to_string(r.size()) + " and " + std::to_string(cols) + ")");
      flat.insert(flat.end(), r.begin(), r.end());
      owner.push_back(c);
    }
  return flat;
}

}  // namespace

std::vector<float> RandomCostModel::predict(const std::vector<StoreRows>& candidates) {
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> out;
  for (size_t i = 0; i < candidates.size(); ++i) out.push_back(u(rng_));
  return out;
}

struct XgbStoreCostModel::Booster {
  std::unique_ptr<features::XgbBooster> booster;
};

XgbStoreCostModel::XgbStoreCostModel(XgbStoreModelOptions options) : options_(options) {}
XgbStoreCostModel::~XgbStoreCostModel() = default;

void XgbStoreCostModel::update(const std::vector<MeasuredCandidate>& measured) {
  for (const auto& m : measured)
    if (!m.rows.empty()) data_.push_back(m);
  retrain();
}

void XgbStoreCostModel::retrain() {
  if (data_.empty()) return;
  // Targets: throughput normalised per task.
  std::map<std::string, double> best;
  for (const auto& m : data_)
    if (valid_cost(m.cost)) {
      auto [it, inserted] = best.try_emplace(m.task, m.cost);
      if (!inserted) it->second = std::min(it->second, m.cost);
    }
  std::vector<float> y(data_.size(), 0.0f);
  for (size_t i = 0; i < data_.size(); ++i)
    if (valid_cost(data_[i].cost)) y[i] = static_cast<float>(best.at(data_[i].task) / data_[i].cost);

  std::vector<const StoreRows*> candidates;
  for (const auto& m : data_) candidates.push_back(&m.rows);
  std::vector<size_t> owner;
  size_t cols = 0;
  const std::vector<float> flat = stack_rows(candidates, owner, cols);
  features::XgbMatrix train(flat, owner.size(), cols);
  // Labels are not used by the custom loss, but XGBoost wants one per row.
  train.set_floats("label", std::vector<float>(owner.size(), 0.0f));
  const features::XgbParams params = {
      {"max_depth", std::to_string(options_.max_depth)},
      {"eta", std::to_string(options_.eta)},
      {"gamma", "0.0001"},
      {"min_child_weight", "0"},
      {"lambda", "1"},
      {"base_score", "0"},
      {"nthread", std::to_string(options_.nthread)},
      {"seed", std::to_string(options_.seed % 2147483647)},
      {"tree_method", "hist"},
      {"verbosity", "0"},
  };
  auto booster = std::make_unique<Booster>();
  booster->booster = std::make_unique<features::XgbBooster>(train, params);
  std::vector<float> grad(owner.size()), hess(owner.size());
  std::vector<double> sums(data_.size());
  for (int round = 0; round < options_.rounds; ++round) {
    std::fill(sums.begin(), sums.end(), 0.0);
    if (round > 0) {
      const std::vector<float> margins = booster->booster->predict(train, true);
      for (size_t r = 0; r < owner.size(); ++r) sums[owner[r]] += margins[r];
    }
    // d/d(store score) of (sum - y)^2 is 2 (sum - y) for each of the candidate's stores.
    for (size_t r = 0; r < owner.size(); ++r) {
      grad[r] = static_cast<float>(2.0 * (sums[owner[r]] - y[owner[r]]));
      hess[r] = 2.0f;
    }
    booster->booster->boost(train, grad, hess);
  }
  booster_ = std::move(booster);
}

std::vector<float> XgbStoreCostModel::predict(const std::vector<StoreRows>& candidates) {
  std::vector<float> scores(candidates.size(), 0.0f);
  if (!booster_ || candidates.empty()) return scores;
  std::vector<const StoreRows*> ptrs;
  for (const auto& c : candidates) ptrs.push_back(&c);
  std::vector<size_t> owner;
  size_t cols = 0;
  const std::vector<float> flat = stack_rows(ptrs, owner, cols);
  if (owner.empty()) return scores;
  features::XgbMatrix m(flat, owner.size(), cols);
  const std::vector<float> margins = booster_->booster->predict(m, true);
  for (size_t r = 0; r < owner.size(); ++r) scores[owner[r]] += margins[r];
  for (float& s : scores)
    if (!std::isfinite(s)) s = -std::numeric_limits<float>::max();
  return scores;
}

}  // namespace tessera::autoschedule
