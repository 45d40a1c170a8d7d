// The only file that includes XGBoost's C API.
#include "autotvm/xgb_cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "tessera/error.h"

namespace tessera::autotvm {
namespace {

void check(int rc, const char* what) {
  if (rc != 0) throw Error(std::string("xgboost: ") + what + " failed: " + XGBGetLastError());
}

// Owns a DMatrixHandle.
class DMatrix {
 public:
  DMatrix(const std::vector<float>& data, size_t rows, size_t cols) {
    check(XGDMatrixCreateFromMat(data.data(), rows, cols, std::numeric_limits<float>::quiet_NaN(), &handle_),
          "XGDMatrixCreateFromMat");
  }
  ~DMatrix() {
    if (handle_) XGDMatrixFree(handle_);
  }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
  DMatrixHandle get() const { return handle_; }
  void set_floats(const char* field, const std::vector<float>& v) {
    check(XGDMatrixSetFloatInfo(handle_, field, v.data(), v.size()), field);
  }
  void set_uints(const char* field, const std::vector<unsigned>& v) {
    check(XGDMatrixSetUIntInfo(handle_, field, v.data(), v.size()), field);
  }

 private:
  DMatrixHandle handle_ = nullptr;
};

// Row-major copy of feature vectors in the given row order; checks the width.
std::vector<float> flatten(const std::vector<std::vector<float>>& rows, const std::vector<size_t>& order,
                           size_t* cols) {
  *cols = rows.empty() ? 0 : rows[order.front()].size();
  std::vector<float> out;
  out.reserve(order.size() * *cols);
  for (size_t r : order) {
    if (rows[r].size() != *cols)
      throw Error("xgb cost model: feature vectors of different lengths (" + std::to_string(rows[r].size()) + " and " +
                  std::to_string(*cols) + ")");
    out.insert(out.end(), rows[r].begin(), rows[r].end());
  }
  return out;
}

bool is_valid_cost(double c) { return std::isfinite(c) && c > 0; }

}  // namespace

struct XgbCostModel::Booster {
  BoosterHandle handle = nullptr;
  ~Booster() {
    if (handle) XGBoosterFree(handle);
  }
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
  std::vector<float> data = flatten(rows.features, order, &cols);
  DMatrix train(data, n, cols);
  train.set_floats("label", labels);
  if (options_.loss == XgbLoss::Reg) {
    train.set_floats("weight", row_weights);
  } else {
    train.set_uints("group", group_sizes);
    train.set_floats("weight", group_weights);
  }

  auto booster = std::make_unique<Booster>();
  DMatrixHandle cache[] = {train.get()};
  check(XGBoosterCreate(cache, 1, &booster->handle), "XGBoosterCreate");
  auto set = [&](const char* name, const std::string& value) {
    check(XGBoosterSetParam(booster->handle, name, value.c_str()), name);
  };
  set("objective", options_.loss == XgbLoss::Reg ? "reg:squarederror" : "rank:pairwise");
  set("max_depth", std::to_string(options_.max_depth));
  set("eta", std::to_string(options_.eta));
  set("gamma", "0.0001");
  set("min_child_weight", "1");
  set("subsample", "1");
  set("lambda", "1");
  set("nthread", std::to_string(options_.nthread));
  set("seed", std::to_string(options_.seed % 2147483647));
  set("tree_method", "hist");
  set("verbosity", "0");
  for (int it = 0; it < options_.rounds; ++it)
    check(XGBoosterUpdateOneIter(booster->handle, it, train.get()), "XGBoosterUpdateOneIter");
  booster_ = std::move(booster);
}

std::vector<float> XgbCostModel::predict(const std::vector<std::vector<float>>& features) const {
  if (!booster_) throw Error("xgb cost model: predict before fit");
  if (features.empty()) return {};
  std::vector<size_t> order(features.size());
  std::iota(order.begin(), order.end(), 0);
  size_t cols = 0;
  std::vector<float> data = flatten(features, order, &cols);
  DMatrix m(data, features.size(), cols);
  bst_ulong len = 0;
  const float* out = nullptr;
  check(XGBoosterPredict(booster_->handle, m.get(), 0, 0, 0, &len, &out), "XGBoosterPredict");
  if (len != features.size()) throw Error("xgb cost model: prediction has the wrong length");
  std::vector<float> scores(out, out + len);
  for (float& s : scores)
    if (!std::isfinite(s)) s = -std::numeric_limits<float>::max();
  return scores;
}

}  // namespace tessera::autotvm
