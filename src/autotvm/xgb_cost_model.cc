#include "autotvm/xgb_cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "features/xgb_booster.h"
#include "tessera/error.h"

namespace tessera::autotvm {
namespace {

using features::XgbBooster;
using features::XgbMatrix;

bool is_valid_cost(double c) { return std::isfinite(c) && c > 0; }

}  // namespace

struct XgbCostModel::Booster {
  std::unique_ptr<XgbBooster> booster;
};

XgbCostModel::XgbCostModel(XgbOptions options) : options_(options) {}
XgbCostModel::~XgbCostModel() = default;
XgbCostModel::XgbCostModel(XgbCostModel&&) noexcept = default;
XgbCostModel& XgbCostModel::operator=(XgbCostModel&&) noexcept = default;

bool XgbCostModel::trained() const { return booster_ != nullptr; }

std::vector<float> XgbCostModel::normalised_throughput(const std::vector<double>& costs) {
  double best = std::numeric_limits<double>::infinity();
  for (double c : costs)
    if (is_valid_cost(c)) best = std::min(best, c);
  std::vector<float> y(costs.size(), 0.0f);
  for (size_t i = 0; i < costs.size(); ++i)
    if (is_valid_cost(costs[i])) y[i] = static_cast<float>(best / costs[i]);
  return y;
}

std::vector<float> XgbCostModel::binarise(const std::vector<float>& y, double quantile) {
  std::vector<float> valid;
  for (float v : y)
    if (v > 0) valid.push_back(v);
  std::vector<float> out(y.size(), 0.0f);
  if (valid.empty()) return out;
  std::sort(valid.begin(), valid.end());
  double q = std::clamp(quantile, 0.0, 1.0);
  float threshold = valid[static_cast<size_t>(std::floor(q * static_cast<double>(valid.size() - 1)))];
  for (size_t i = 0; i < y.size(); ++i) out[i] = (y[i] > 0 && y[i] >= threshold) ? 1.0f : 0.0f;
  return out;
}

void XgbCostModel::fit(const std::vector<std::vector<float>>& features, const std::vector<double>& costs) {
  fit(TrainingRows{features, costs, {}, {}});
}

void XgbCostModel::fit(const TrainingRows& rows) {
  const size_t n = rows.features.size();
  if (rows.costs.size() != n || (!rows.groups.empty() && rows.groups.size() != n))
    throw Error("xgb cost model: features, costs and groups differ in length");
  if (n == 0) return;
  std::vector<int> groups = rows.groups.empty() ? std::vector<int>(n, 0) : rows.groups;
  auto group_weight = [&](int g) {
    return g >= 0 && static_cast<size_t>(g) < rows.group_weights.size() ? rows.group_weights[g] : 1.0f;
  };

  // Rows sorted by group (XGBoost's ranking wants each group contiguous).
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return groups[a] < groups[b]; });

  // Targets, normalised within each group.
  std::vector<float> labels(n);
  std::vector<unsigned> group_sizes;
  std::vector<float> group_weights, row_weights(n);
  for (size_t begin = 0; begin < n;) {
    size_t end = begin;
    while (end < n && groups[order[end]] == groups[order[begin]]) ++end;
    std::vector<double> costs;
    for (size_t i = begin; i < end; ++i) costs.push_back(rows.costs[order[i]]);
    std::vector<float> y = normalised_throughput(costs);
    if (options_.loss == XgbLoss::RankBinary) y = binarise(y, options_.binary_quantile);
    float w = group_weight(groups[order[begin]]);
    for (size_t i = begin; i < end; ++i) {
      labels[i] = y[i - begin];
      row_weights[i] = w;
    }
    group_sizes.push_back(static_cast<unsigned>(end - begin));
    group_weights.push_back(w);
    begin = end;
  }

  size_t cols = 0;
  std::vector<float> data = features::flatten_rows(rows.features, order, &cols);
  XgbMatrix train(data, n, cols);
  train.set_floats("label", labels);
  if (options_.loss == XgbLoss::Reg) {
    train.set_floats("weight", row_weights);
  } else {
    train.set_uints("group", group_sizes);
    train.set_floats("weight", group_weights);
  }

  const features::XgbParams params = {
      {"objective", options_.loss == XgbLoss::Reg ? "reg:squarederror" : "rank:pairwise"},
      {"max_depth", std::to_string(options_.max_depth)},
      {"eta", std::to_string(options_.eta)},
      {"gamma", "0.0001"},
      {"min_child_weight", "1"},
      {"subsample", "1"},
      {"lambda", "1"},
      {"nthread", std::to_string(options_.nthread)},
      {"seed", std::to_string(options_.seed % 2147483647)},
      {"tree_method", "hist"},
      {"verbosity", "0"},
  };
  auto booster = std::make_unique<Booster>();
  booster->booster = std::make_unique<XgbBooster>(train, params);
  for (int it = 0; it < options_.rounds; ++it) booster->booster->update(it, train);
  booster_ = std::move(booster);
}

std::vector<float> XgbCostModel::predict(const std::vector<std::vector<float>>& features) const {
  if (!booster_) throw Error("xgb cost model: predict before fit");
  if (features.empty()) return {};
  std::vector<size_t> order(features.size());
  std::iota(order.begin(), order.end(), 0);
  size_t cols = 0;
  std::vector<float> data = features::flatten_rows(features, order, &cols);
  XgbMatrix m(data, features.size(), cols);
  std::vector<float> scores = booster_->booster->predict(m);
  for (float& s : scores)
    if (!std::isfinite(s)) s = -std::numeric_limits<float>::max();
  return scores;
}

}  // namespace tessera::autotvm
