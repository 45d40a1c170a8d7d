// The XGBoost tuner. How a batch is chosen:
//  1. Until kPlanSize configs are measured (and no history trained the model),
//     configs are drawn at random.
//  2. After every measured batch the model is retrained on all measurements.
//  3. A plan of the kPlanSize best unvisited configs the model knows of is
//     found by simulated annealing: parallel chains walk the space one knob
//     change at a time, accepting worse neighbours with a probability that
//     falls as the temperature decays linearly from 1 to 0. The chains go on
//     from where they stopped at the next plan, plus restarts at the best
//     measured configs.
//  4. Batches are taken from the plan, best first, preferring at each pick the
//     config (among the next few) that adds the most (knob, choice) pairs not
//     yet in the batch: a cheap form of the submodular diversity TVM uses.
//     A fraction kEpsilon of the picks are random, for exploration.
//
// Transfer learning (itervar / curve features only, as these do not depend on
// the config space): load_history lowers the earlier measurements and pools
// them with this task's rows (up to kMaxHistoryRows, an even share per earlier
// task: rows_to_learn in history.h). Each earlier task is its own group, so ranking
// losses never compare kernels of different tasks and throughput is
// normalised per task; other tasks' groups weigh kHistoryWeight, this task's
// 1. With knob features, other tasks' history is ignored.
#include "autotvm/xgb_tuner.h"

#include "autotvm/history.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

namespace tessera::autotvm {
namespace {

constexpr int kPlanSize = 64;
constexpr double kEpsilon = 0.05;
constexpr float kHistoryWeight = 0.5f;
constexpr size_t kMaxHistoryRows = 2000;  // lowering each costs ~1 ms
constexpr size_t kMaxCachedFeatures = 200000;
constexpr int kDiversityWindow = 8;  // plan entries considered per pick

class XgbTuner : public Tuner {
 public:
  XgbTuner(const Task& task, XgbLoss loss, FeatureType feature, uint64_t seed)
      : Tuner(task), feature_(feature), rng_(seed), model_(XgbOptions{.loss = loss, .seed = seed}) {
    for (const Knob& k : task.space.knobs()) radix_.push_back(static_cast<int>(k.candidates.size()));
    // Lowering every candidate is what costs for loop features: smaller walks.
    chains_ = feature == FeatureType::Knob ? 128 : 64;
    steps_ = feature == FeatureType::Knob ? 500 : 60;
  }

  std::vector<ConfigEntity> next_batch(int batch_size) override;
  void update(const std::vector<ConfigEntity>& configs, const std::vector<measure::MeasureResult>& results) override;
  void load_history(const std::vector<measure::MeasureInput>& inputs,
                    const std::vector<measure::MeasureResult>& results) override;

 private:
  const std::vector<float>& features_of(int64_t index);
  std::vector<float> scores_of(const std::vector<int64_t>& indices);
  int64_t random_unvisited();
  int64_t take_from_plan(const std::set<std::pair<size_t, int>>& covered);
  void retrain();
  void make_plan();

  FeatureType feature_;
  std::mt19937_64 rng_;
  XgbCostModel model_;
  std::vector<int> radix_;  // candidates per knob
  int chains_, steps_;

  std::unordered_map<int64_t, std::vector<float>> feature_cache_;
  std::unordered_map<int64_t, float> score_cache_;         // under the current model
  TrainingRows own_;                                       // this task's measurements (and its own history), group 0
  TrainingRows history_;                                   // other tasks, groups 1..
  std::vector<std::pair<double, int64_t>> best_measured_;  // (cost, index), valid only
  std::vector<int64_t> plan_;                              // best first
  std::vector<std::vector<int>> points_;                   // annealing chains
};

const std::vector<float>& XgbTuner::features_of(int64_t index) {
  auto it = feature_cache_.find(index);
  if (it != feature_cache_.end()) return it->second;
  if (feature_cache_.size() >= kMaxCachedFeatures) feature_cache_.clear();
  return feature_cache_[index] = config_features(task_, task_.space.get(index), feature_);
}

std::vector<float> XgbTuner::scores_of(const std::vector<int64_t>& indices) {
  std::vector<int64_t> todo;
  std::vector<std::vector<float>> rows;
  for (int64_t i : indices)
    if (!score_cache_.count(i) && std::find(todo.begin(), todo.end(), i) == todo.end()) {
      todo.push_back(i);
      rows.push_back(features_of(i));
    }
  if (!rows.empty()) {
    std::vector<float> s = model_.predict(rows);
    for (size_t k = 0; k < todo.size(); ++k) score_cache_[todo[k]] = s[k];
  }
  std::vector<float> out;
  for (int64_t i : indices) out.push_back(score_cache_.at(i));
  return out;
}

// Rejection sampling while unvisited configs are easy to hit; a scan otherwise.
int64_t XgbTuner::random_unvisited() {
  const int64_t size = task_.space.size();
  if (num_visited() >= size) return -1;
  std::uniform_int_distribution<int64_t> any(0, size - 1);
  for (int tries = 0; tries < 256; ++tries) {
    int64_t i = any(rng_);
    if (!visited(i)) return i;
  }
  std::vector<int64_t> left;
  for (int64_t i = 0; i < size && left.size() < 4096; ++i)
    if (!visited(i)) left.push_back(i);
  if (left.empty()) return -1;
  return left[std::uniform_int_distribution<size_t>(0, left.size() - 1)(rng_)];
}

int64_t XgbTuner::take_from_plan(const std::set<std::pair<size_t, int>>& covered) {
  plan_.erase(std::remove_if(plan_.begin(), plan_.end(), [&](int64_t i) { return visited(i); }), plan_.end());
  if (plan_.empty()) return -1;
  size_t best = 0;
  int best_gain = -1;
  for (size_t p = 0; p < plan_.size() && p < static_cast<size_t>(kDiversityWindow); ++p) {
    std::vector<int> c = task_.space.choices_of(plan_[p]);
    int gain = 0;
    for (size_t k = 0; k < c.size(); ++k) gain += covered.count({k, c[k]}) ? 0 : 1;
    if (gain > best_gain) best_gain = gain, best = p;  // ties: the higher score
  }
  int64_t index = plan_[best];
  plan_.erase(plan_.begin() + static_cast<std::ptrdiff_t>(best));
  return index;
}

std::vector<ConfigEntity> XgbTuner::next_batch(int batch_size) {
  std::vector<ConfigEntity> batch;
  std::set<std::pair<size_t, int>> covered;  // (knob, choice) pairs in the batch
  std::uniform_real_distribution<double> coin(0, 1);
  while (static_cast<int>(batch.size()) < batch_size && has_next()) {
    int64_t index = -1;
    if (model_.trained() && coin(rng_) >= kEpsilon) {
      index = take_from_plan(covered);
      if (index < 0) {
        make_plan();
        index = take_from_plan(covered);
      }
    }
    if (index < 0) index = random_unvisited();
    if (index < 0) break;
    visit(index);
    batch.push_back(task_.space.get(index));
    const std::vector<int>& c = batch.back().choices();
    for (size_t k = 0; k < c.size(); ++k) covered.insert({k, c[k]});
  }
  return batch;
}

void XgbTuner::update(const std::vector<ConfigEntity>& configs, const std::vector<measure::MeasureResult>& results) {
  Tuner::update(configs, results);
  for (size_t i = 0; i < configs.size() && i < results.size(); ++i) {
    const int64_t index = configs[i].index();
    const double cost = results[i].rank_cost();
    own_.features.push_back(features_of(index));
    own_.costs.push_back(cost);
    if (std::isfinite(cost)) best_measured_.push_back({cost, index});
  }
  std::sort(best_measured_.begin(), best_measured_.end());
  if (own_.costs.size() + history_.costs.size() >= static_cast<size_t>(kPlanSize)) retrain();
}

void XgbTuner::load_history(const std::vector<measure::MeasureInput>& inputs,
                            const std::vector<measure::MeasureResult>& results) {
  if (feature_ == FeatureType::Knob) return;  // knob features mean nothing across spaces
  // Own measurements are of the task's DAG (its record key may be another's: see Task::record_key).
  const std::string own_key = task_.workload.dag.workload_key();
  const size_t n = std::min(inputs.size(), results.size());
  std::vector<std::string> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = inputs[i].dag.workload_key();
  std::map<std::string, int> group_of;
  for (size_t i : rows_to_learn(keys, own_key, kMaxHistoryRows)) {
    const std::string& key = keys[i];
    const double cost = results[i].rank_cost();
    std::vector<float> f = loop_features(inputs[i], feature_);
    if (key == own_key) {
      own_.features.push_back(std::move(f));
      own_.costs.push_back(cost);
      continue;
    }
    auto [it, added] = group_of.try_emplace(key, static_cast<int>(history_.group_weights.size()) + 1);
    if (added) history_.group_weights.push_back(kHistoryWeight);
    history_.features.push_back(std::move(f));
    history_.costs.push_back(cost);
    history_.groups.push_back(it->second);
  }
  if (own_.costs.size() + history_.costs.size() >= static_cast<size_t>(kPlanSize)) retrain();
}

void XgbTuner::retrain() {
  TrainingRows rows;
  rows.features = own_.features;
  rows.costs = own_.costs;
  rows.groups.assign(own_.costs.size(), 0);
  rows.group_weights = {1.0f};
  rows.features.insert(rows.features.end(), history_.features.begin(), history_.features.end());
  rows.costs.insert(rows.costs.end(), history_.costs.begin(), history_.costs.end());
  rows.groups.insert(rows.groups.end(), history_.groups.begin(), history_.groups.end());
  rows.group_weights.insert(rows.group_weights.end(), history_.group_weights.begin(), history_.group_weights.end());
  model_.fit(rows);
  score_cache_.clear();
  // The plan's order under the new model.
  std::vector<float> s = scores_of(plan_);
  std::vector<size_t> order(plan_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] > s[b]; });
  std::vector<int64_t> sorted;
  for (size_t i : order) sorted.push_back(plan_[i]);
  plan_ = std::move(sorted);
}

void XgbTuner::make_plan() {
  std::uniform_real_distribution<double> coin(0, 1);
  std::vector<size_t> movable;  // knobs with a choice to make
  for (size_t k = 0; k < radix_.size(); ++k)
    if (radix_[k] > 1) movable.push_back(k);

  // Chains: where they stopped last time, restarts at the best measured
  // configs for a quarter of them, random points to fill up.
  const size_t restarts = std::min(best_measured_.size(), static_cast<size_t>(chains_ / 4));
  for (size_t r = 0; r < restarts; ++r) {
    std::vector<int> c = task_.space.choices_of(best_measured_[r].second);
    if (points_.size() < static_cast<size_t>(chains_))
      points_.push_back(c);
    else
      points_[r] = c;
  }
  const int64_t size = task_.space.size();
  std::uniform_int_distribution<int64_t> any(0, size - 1);
  while (points_.size() < static_cast<size_t>(chains_)) points_.push_back(task_.space.choices_of(any(rng_)));

  std::vector<int64_t> current(points_.size());
  for (size_t c = 0; c < points_.size(); ++c) current[c] = task_.space.index_of(points_[c]);
  std::vector<float> score = scores_of(current);

  // Top kPlanSize unvisited configs seen: a set ordered by (score, index).
  std::set<std::pair<float, int64_t>> top;
  std::unordered_map<int64_t, float> in_top;
  auto offer = [&](int64_t i, float s) {
    if (visited(i) || in_top.count(i)) return false;
    if (top.size() >= static_cast<size_t>(kPlanSize) && s <= top.begin()->first) return false;
    top.insert({s, i});
    in_top[i] = s;
    if (top.size() > static_cast<size_t>(kPlanSize)) {
      in_top.erase(top.begin()->second);
      top.erase(top.begin());
    }
    return true;
  };
  for (size_t c = 0; c < current.size(); ++c) offer(current[c], score[c]);

  // Temperatures are relative to the spread of the starting scores, so that
  // every loss (regression or ranking scores) anneals alike.
  auto [lo, hi] = std::minmax_element(score.begin(), score.end());
  const double scale = std::max(1e-6, static_cast<double>(*hi - *lo));
  int quiet = 0;  // steps without a change of the top set
  for (int step = 0; step < steps_ && !movable.empty(); ++step) {
    const double temperature = 1.0 - static_cast<double>(step) / steps_;
    std::vector<std::vector<int>> next = points_;
    std::vector<int64_t> proposal(points_.size());
    for (size_t c = 0; c < points_.size(); ++c) {
      size_t k = movable[std::uniform_int_distribution<size_t>(0, movable.size() - 1)(rng_)];
      int shift = std::uniform_int_distribution<int>(1, radix_[k] - 1)(rng_);
      next[c][k] = (next[c][k] + shift) % radix_[k];
      proposal[c] = task_.space.index_of(next[c]);
    }
    std::vector<float> s = scores_of(proposal);
    bool changed = false;
    for (size_t c = 0; c < points_.size(); ++c) {
      changed = offer(proposal[c], s[c]) || changed;
      const double delta = (s[c] - score[c]) / scale;
      if (delta >= 0 || (temperature > 0 && coin(rng_) < std::exp(delta / temperature))) {
        points_[c] = next[c];
        score[c] = s[c];
      }
    }
    quiet = changed ? 0 : quiet + 1;
    if (quiet >= std::max(20, steps_ / 5)) break;
  }

  plan_.clear();
  for (auto it = top.rbegin(); it != top.rend(); ++it) plan_.push_back(it->second);
}

}  // namespace

std::unique_ptr<Tuner> make_xgb_tuner(const Task& task, XgbLoss loss, FeatureType feature, uint64_t seed) {
  return std::make_unique<XgbTuner>(task, loss, feature, seed);
}

}  // namespace tessera::autotvm
