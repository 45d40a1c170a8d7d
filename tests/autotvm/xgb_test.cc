// The XGBoost cost model and tuner: targets, fitting a known function, the
// tuner's search on a synthetic cost, transfer learning, and the model's
// ranking of real measurements of a conv2d task on this machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <set>

#include "autotvm/config_features.h"
#include "autotvm/xgb_cost_model.h"
#include "autotvm/xgb_tuner.h"
#include "measure/builder.h"
#include "measure/runner.h"
#include "ops/workloads.h"
#include "tessera/error.h"

namespace tessera::autotvm {
namespace {

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {  // ties share their mean rank
    size_t j = i;
    while (j < order.size() && v[order[j]] == v[order[i]]) ++j;
    for (size_t k = i; k < j; ++k) r[order[k]] = (i + j - 1) / 2.0;
    i = j;
  }
  return r;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> x = ranks(a), y = ranks(b);
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i] / x.size(), my += y[i] / y.size();
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

TEST(AutotvmXgbCostModel, TargetsAreNormalisedThroughputWithFailuresAtZero) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<float> y = XgbCostModel::normalised_throughput({2e-3, 1e-3, inf, 4e-3, 0});
  EXPECT_EQ(y, (std::vector<float>{0.5f, 1.0f, 0.0f, 0.25f, 0.0f}));
  // Valid y sorted: 0.25, 0.5, 1; the 0.5 quantile is 0.5.
  EXPECT_EQ(XgbCostModel::binarise(y, 0.5), (std::vector<float>{1, 1, 0, 0, 0}));
  EXPECT_EQ(XgbCostModel::binarise({0, 0}, 0.5), (std::vector<float>{0, 0}));
}

TEST(AutotvmXgbCostModel, MisuseIsAnError) {
  XgbCostModel m;
  EXPECT_FALSE(m.trained());
  EXPECT_THROW(m.predict({{1, 2}}), Error);
  EXPECT_THROW(m.fit({{1, 2}, {1}}, {1e-3, 2e-3}), Error);  // rows of different lengths
  EXPECT_THROW(m.fit({{1, 2}}, {1e-3, 2e-3}), Error);       // one cost too many
}

// cost(x) = 1 + (x0 - 0.3)^2 + 2 (x1 - 0.7)^2 + 0.5 x2, x3 is noise: every
// loss ranks 100 held-out points like the truth.
TEST(AutotvmXgbCostModel, FitsASyntheticFunctionAndRanksHeldOutPoints) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(0, 1);
  auto cost = [](const std::vector<float>& x) {
    return 1e-3 * (1 + (x[0] - 0.3) * (x[0] - 0.3) + 2 * (x[1] - 0.7) * (x[1] - 0.7) + 0.5 * x[2]);
  };
  std::vector<std::vector<float>> train, test;
  std::vector<double> train_cost, test_speed;
  for (int i = 0; i < 400; ++i) {
    std::vector<float> x = {u(rng), u(rng), u(rng), u(rng)};
    (i < 300 ? train : test).push_back(x);
    if (i < 300)
      train_cost.push_back(i % 25 == 0 ? std::numeric_limits<double>::infinity() : cost(x));
    else
      test_speed.push_back(1 / cost(x));
  }
  for (XgbLoss loss : {XgbLoss::Reg, XgbLoss::Rank, XgbLoss::RankBinary}) {
    XgbCostModel m({.loss = loss, .rounds = 60});
    m.fit(train, train_cost);
    ASSERT_TRUE(m.trained());
    std::vector<float> s = m.predict(test);
    const double rho = spearman(std::vector<double>(s.begin(), s.end()), test_speed);
    EXPECT_GT(rho, loss == XgbLoss::RankBinary ? 0.5 : 0.8) << "loss " << static_cast<int>(loss);
  }
}

// dense 64x64x64 with a hand-built space: split i, j, k into two parts (7
// choices each) and an unroll switch: 686 configs. The synthetic cost is
// lowest at inner lengths i 8, j 16, k 2 with unrolling.
struct SplitTask {
  Template tmpl;
  Task task;
  SplitTask() {
    tmpl.name = "split_dense.test";
    tmpl.target_kind = "llvm";
    tmpl.apply = [](const ops::Workload&, const target::Target&, const ConfigEntity& c) {
      schedule::Trace t;
      for (const char* axis : {"i", "j", "k"}) t.split("T_dense", axis, {c.split(std::string("tile_") + axis)[1]});
      if (c.value("unroll").get<int>() == 1) t.unroll("T_dense", "k.1");
      return t;
    };
    task.op = "dense";
    task.workload = ops::dense_workload({64, 64}, {64, 64});
    task.target = target::Target::host();
    task.tmpl = &tmpl;
    for (const char* axis : {"i", "j", "k"}) task.space.define_split(std::string("tile_") + axis, 64);
    task.space.define_knob("unroll", {0, 1});
  }
  static double cost(const ConfigEntity& c) {
    auto sq = [](double x) { return x * x; };
    double d = sq(std::log2(c.split("tile_i")[1]) - 3) + sq(std::log2(c.split("tile_j")[1]) - 4) +
               sq(std::log2(c.split("tile_k")[1]) - 1) + (c.value("unroll").get<int>() == 1 ? 0 : 0.5);
    return 1e-4 * (1 + d);
  }
};

class NullBuilder : public measure::Builder {
 public:
  std::vector<measure::BuildResult> build(const std::vector<measure::MeasureInput>& in) override {
    return std::vector<measure::BuildResult>(in.size());
  }
};

// Reads the config back from the trace's split lengths.
class SyntheticRunner : public measure::Runner {
 public:
  explicit SyntheticRunner(const Task& t) : task_(t) {}
  std::vector<measure::MeasureResult> run(const std::vector<measure::MeasureInput>& inputs,
                                          const std::vector<measure::BuildResult>&) override {
    std::vector<measure::MeasureResult> out;
    for (const auto& in : inputs) {
      nlohmann::json v = nlohmann::json::object();
      v["unroll"] = 0;
      for (const auto& step : in.trace.steps()) {
        if (auto* s = std::get_if<schedule::SplitStep>(&step)) {
          int64_t inner = s->lengths.at(0);
          v["tile_" + s->iter] = std::vector<int64_t>{64 / inner, inner};
        } else {
          v["unroll"] = 1;
        }
      }
      ConfigEntity c = task_.space.from_json(v);
      measured.push_back(c.index());
      measure::MeasureResult r;
      r.costs = {SplitTask::cost(c)};
      out.push_back(r);
    }
    return out;
  }
  std::vector<int64_t> measured;

 private:
  const Task& task_;
};

int64_t best_index(const Task& task) {
  int64_t best = 0;
  for (int64_t i = 0; i < task.space.size(); ++i)
    if (SplitTask::cost(task.space.get(i)) < SplitTask::cost(task.space.get(best))) best = i;
  return best;
}

TEST(AutotvmXgbTuner, NeverRepeatsAndFindsTheBestOfASyntheticCost) {
  SplitTask t;
  ASSERT_EQ(t.task.space.size(), 686);
  const int64_t best = best_index(t.task);
  struct Variant {
    XgbLoss loss;
    FeatureType feature;
  };
  for (Variant v : {Variant{XgbLoss::Reg, FeatureType::Knob}, Variant{XgbLoss::Rank, FeatureType::Itervar},
                    Variant{XgbLoss::RankBinary, FeatureType::Curve}}) {
    NullBuilder builder;
    SyntheticRunner runner(t.task);
    SyntheticRunner confirm(t.task);
    auto tuner = make_xgb_tuner(t.task, v.loss, v.feature, 1);
    tuner->tune({.n_trial = 200, .batch_size = 16}, {&builder, &runner, &confirm});
    std::set<int64_t> distinct(runner.measured.begin(), runner.measured.end());
    EXPECT_EQ(distinct.size(), runner.measured.size());
    EXPECT_EQ(runner.measured.size(), 200u);
    EXPECT_EQ(tuner->best_config().index(), best) << static_cast<int>(v.feature);
  }
}

TEST(AutotvmXgbTuner, LoadsHistoryOfAnotherTaskAndKeepsSearching) {
  SplitTask t;
  // "Another task": dense 32x32x32 records, here only its DAG and traces matter.
  ops::Workload other = ops::dense_workload({32, 32}, {32, 32});
  std::vector<measure::MeasureInput> inputs;
  std::vector<measure::MeasureResult> results;
  for (int64_t inner : {1, 2, 4, 8, 16, 32})
    for (int64_t kin : {1, 2, 4, 8, 16, 32}) {
      schedule::Trace tr;
      tr.split("T_dense", "j", {inner}).split("T_dense", "k", {kin});
      inputs.push_back({other.dag, tr, target::Target::host()});
      measure::MeasureResult r;
      r.costs = {1e-4 * (1 + std::abs(std::log2(inner) - 4) + std::abs(std::log2(kin) - 1))};
      results.push_back(r);
      inputs.push_back(inputs.back());
      results.push_back(r);
    }
  NullBuilder builder;
  SyntheticRunner runner(t.task);
  SyntheticRunner confirm(t.task);
  auto tuner = make_xgb_tuner(t.task, XgbLoss::Rank, FeatureType::Itervar, 2);
  tuner->load_history(inputs, results);  // 72 rows: enough to train before measuring
  tuner->tune({.n_trial = 64, .batch_size = 16}, {&builder, &runner, &confirm});
  std::set<int64_t> distinct(runner.measured.begin(), runner.measured.end());
  EXPECT_EQ(distinct.size(), 64u);
  // Knob features ignore other tasks' history.
  auto knob = make_xgb_tuner(t.task, XgbLoss::Reg, FeatureType::Knob, 2);
  EXPECT_NO_THROW(knob->load_history(inputs, results));
}

// The key check: on real measurements of a small conv2d, the model trained on
// 45 configs ranks 15 others positively (Spearman of predicted score vs
// measured throughput, printed for the record).
TEST(AutotvmXgbRealMeasurements, ItervarModelRanksHeldOutConfigs) {
  ops::OpArgs a;
  a.input = {1, 16, 14, 14};
  a.weight = {32, 16, 3, 3};
  a.pad = 1;
  Task task = create_task("conv2d", a, target::Target::host());
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> pick(0, task.space.size() - 1);
  std::vector<ConfigEntity> configs;
  std::set<int64_t> seen;
  while (configs.size() < 60 && static_cast<int64_t>(seen.size()) < task.space.size()) {
    int64_t i = pick(rng);
    if (seen.insert(i).second) configs.push_back(task.space.get(i));
  }
  std::vector<measure::MeasureInput> inputs;
  for (const auto& c : configs) inputs.push_back(task.measure_input(c));
  measure::LocalBuilder builder;
  measure::LocalRunner runner({.number = 3, .repeat = 3, .min_repeat_ms = 5, .num_threads = 1});
  std::vector<measure::MeasureResult> results = measure::measure_batch(builder, runner, inputs);
  ASSERT_EQ(results.size(), configs.size());

  std::vector<std::vector<float>> train, test;
  std::vector<double> train_cost, test_speed;
  for (size_t i = 0; i < configs.size(); ++i) {
    const bool ok = results[i].error == measure::ErrorKind::None && !results[i].costs.empty();
    const double cost = ok ? results[i].min_cost() : std::numeric_limits<double>::infinity();
    std::vector<float> f = loop_features(inputs[i], FeatureType::Itervar);
    if (i < 45) {
      train.push_back(f);
      train_cost.push_back(cost);
    } else {
      test.push_back(f);
      test_speed.push_back(ok ? 1 / cost : 0);
    }
  }
  for (XgbLoss loss : {XgbLoss::Reg, XgbLoss::Rank}) {
    XgbCostModel model({.loss = loss, .rounds = 60});
    model.fit(train, train_cost);
    std::vector<float> s = model.predict(test);
    const double rho = spearman(std::vector<double>(s.begin(), s.end()), test_speed);
    std::cout << "[ xgb itervar " << (loss == XgbLoss::Reg ? "reg " : "rank") << " ] Spearman on 15 held-out "
              << task.name() << " configs (trained on 45): " << rho << std::endl;
    EXPECT_GT(rho, 0) << "loss " << static_cast<int>(loss);
  }
}

}  // namespace
}  // namespace tessera::autotvm
