#include "autotvm/tuner.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>

#include "autotvm/ga_tuner.h"
#include "autotvm/gridsearch_tuner.h"
#include "autotvm/random_tuner.h"
#include "autotvm/xgb_tuner.h"
#include "tessera/error.h"

namespace tessera::autotvm {

namespace {

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// Builds and runs a batch. A config whose schedule cannot be instantiated
// becomes an Instantiation error result instead of reaching the builder, so a
// bad config costs its own trial and nothing else.
std::vector<measure::MeasureResult> measure_configs(const Task& task, const std::vector<ConfigEntity>& configs,
                                                    const MeasureOption& measure) {
  std::vector<std::optional<measure::MeasureResult>> failed(configs.size());
  std::vector<measure::MeasureInput> inputs;
  std::vector<size_t> positions;  // of `inputs` in `configs`
  for (size_t i = 0; i < configs.size(); ++i) {
    try {
      inputs.push_back(task.measure_input(configs[i]));
      positions.push_back(i);
    } catch (const std::exception& e) {
      measure::MeasureResult r;
      r.error = measure::ErrorKind::Instantiation;
      r.error_message = e.what();
      r.timestamp = unix_now();
      failed[i] = std::move(r);
    }
  }
  std::vector<measure::MeasureResult> measured;
  if (!inputs.empty()) measured = measure::measure_batch(*measure.builder, *measure.runner, inputs);
  if (measured.size() != inputs.size())
    throw Error("measure: expected " + std::to_string(inputs.size()) + " results for task " + task.describe() +
                ", got " + std::to_string(measured.size()));

  std::vector<measure::MeasureResult> results(configs.size());
  for (size_t i = 0; i < configs.size(); ++i)
    if (failed[i]) results[i] = std::move(*failed[i]);
  for (size_t k = 0; k < positions.size(); ++k) results[positions[k]] = std::move(measured[k]);
  return results;
}

}  // namespace

void Tuner::note_leader(int64_t index, const measure::MeasureResult& result) {
  if (!result.valid()) return;
  auto [it, inserted] = leader_cost_.try_emplace(index, result.rank_cost());
  if (!inserted) it->second = std::min(it->second, result.rank_cost());
}

bool Tuner::note_best(int64_t index, const measure::MeasureResult& result) {
  if (!result.valid()) return false;
  const double flops = task_.flop() / result.rank_cost();
  if (flops <= best_flops_) return false;
  best_flops_ = flops;
  best_config_ = task_.space.get(index);
  return true;
}

void Tuner::mark_measured(int64_t index, const measure::MeasureResult& result) {
  visited_.insert(index);
  note_leader(index, result);
  // A resumed log's best is this task's best so far, whether or not its
  // leaders are re-measured at the end (best_trial stays: patience counts
  // from this run's start).
  note_best(index, result);
}

void Tuner::update(const std::vector<ConfigEntity>& configs, const std::vector<measure::MeasureResult>& results) {
  // tune() counts the batch after this, so config i is trial trials_ + i + 1.
  for (size_t i = 0; i < configs.size() && i < results.size(); ++i) {
    note_leader(configs[i].index(), results[i]);
    if (note_best(configs[i].index(), results[i])) best_trial_ = trials_ + static_cast<int64_t>(i) + 1;
  }
}

bool Tuner::has_next() const { return num_visited() < task_.space.size(); }

void Tuner::tune(const TuneOptions& options, const MeasureOption& measure, const std::vector<Callback>& callbacks) {
  if (measure.builder == nullptr || measure.runner == nullptr)
    throw Error("tune: the measure option needs both a builder and a runner");
  const int64_t budget = std::min<int64_t>(std::max(options.n_trial, 0), task_.space.size());
  const int batch_size = options.batch_size > 0 ? options.batch_size : default_batch_size();
  const int64_t start = trials_;
  // With nothing valid yet, the patience counts from the start of this run.
  auto last_improvement = [&] { return std::max(best_trial_, start); };

  // The space's fallback (the hand-written schedule for conv and dense) is
  // measured first, unless a resumed log has it: the search only ever adds
  // configs, so a tuned task is never measured slower than its default.
  std::vector<ConfigEntity> seed;
  if (budget > 0) {
    ConfigEntity fallback = task_.space.fallback();
    if (!visited(fallback.index())) {
      visit(fallback.index());
      seed.push_back(std::move(fallback));
    }
  }
  const auto began = std::chrono::steady_clock::now();
  auto out_of_time = [&] {
    return options.time_budget_s > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count() >= options.time_budget_s;
  };
  auto stop_requested = [&] { return options.stop != nullptr && options.stop->load(); };
  stopped_ = false;
  while (trials_ - start < budget && (!seed.empty() || has_next()) && !out_of_time()) {
    if (stop_requested()) break;
    const int64_t remaining = budget - (trials_ - start);
    std::vector<ConfigEntity> configs = std::move(seed);  // the fallback opens the first batch
    seed.clear();
    const int64_t more = std::min<int64_t>(batch_size, remaining) - static_cast<int64_t>(configs.size());
    if (more > 0)
      for (ConfigEntity& c : next_batch(static_cast<int>(more))) configs.push_back(std::move(c));
    if (configs.empty()) break;
    const std::vector<measure::MeasureResult> results = measure_configs(task_, configs, measure);
    if (stop_requested()) break;  // its results may be interrupted runs, not the configs' own
    update(configs, results);
    trials_ += static_cast<int64_t>(configs.size());
    for (const Callback& callback : callbacks) callback(*this, configs, results);
    if (options.early_stopping > 0 && trials_ - last_improvement() >= options.early_stopping) break;
  }
  stopped_ = stop_requested();
  if (!stopped_) confirm_leaders(options, measure, callbacks);
  stopped_ = stop_requested();  // a stop during the confirmation stops the run too: it is not finished
  for (const Callback& callback : callbacks) callback(*this, {}, {});  // "finished"
}

void Tuner::confirm_leaders(const TuneOptions& options, const MeasureOption& measure,
                            const std::vector<Callback>& callbacks) {
  if (options.confirm_leaders <= 0 || options.confirm_rounds <= 0 || leader_cost_.empty()) return;
  std::vector<std::pair<double, int64_t>> ranked;  // (seconds, index), fastest first; ties by index
  for (const auto& [index, cost] : leader_cost_) ranked.emplace_back(cost, index);
  std::sort(ranked.begin(), ranked.end());
  ranked.resize(std::min<size_t>(ranked.size(), static_cast<size_t>(options.confirm_leaders)));

  std::vector<ConfigEntity> leaders;
  std::vector<measure::MeasureInput> inputs;
  for (const auto& [cost, index] : ranked) {
    try {
      ConfigEntity c = task_.space.get(index);
      inputs.push_back(task_.measure_input(c));
      leaders.push_back(std::move(c));
    } catch (const std::exception&) {
      // It was measured, so it instantiates; a template changed since a
      // resumed log was written. It is simply not a leader.
    }
  }
  if (leaders.empty()) return;
  measure::Runner& runner = measure.confirm_runner ? *measure.confirm_runner : *measure.runner;
  const auto rounds = measure::measure_rounds(*measure.builder, runner, inputs, options.confirm_rounds);
  // Stopped meanwhile: the rounds may hold interrupted runs, not the leaders'
  // times. Nothing is logged, so a resumed run confirms them afresh.
  if (options.stop != nullptr && options.stop->load()) return;

  // Each leader's result holds one cost per round (that round's fastest
  // repeat); a leader that fails in any round is no leader.
  std::vector<measure::MeasureResult> confirmed;
  for (size_t i = 0; i < leaders.size(); ++i) confirmed.push_back(measure::combine_rounds(rounds, i));

  double best_cost = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < leaders.size(); ++i) {
    if (!confirmed[i].valid() || confirmed[i].rank_cost() >= best_cost) continue;
    best_cost = confirmed[i].rank_cost();
    best_config_ = leaders[i];
    best_flops_ = task_.flop() / best_cost;
  }
  confirming_ = true;
  for (const Callback& callback : callbacks) callback(*this, leaders, confirmed);
  confirming_ = false;
}

measure::LocalRunnerOptions search_runner_options(int threads) {
  measure::LocalRunnerOptions o;
  o.number = kSearchNumber;
  o.repeat = kSearchRepeat;
  o.min_repeat_ms = kSearchMinRepeatMs;
  o.num_threads = threads;
  return o;
}

measure::LocalRunnerOptions confirm_runner_options(measure::LocalRunnerOptions search) {
  search.min_repeat_ms = std::max(100, 5 * search.min_repeat_ms);
  search.check_correctness = false;
  return search;
}

namespace {

struct XgbVariant {
  const char* name;
  XgbLoss loss;
  FeatureType feature;
};

// Seed 000's names. As there, the loss comes from the name's prefix and the
// features from its suffix, defaulting to itervar (TVM's XGBTuner default).
constexpr XgbVariant kXgbVariants[] = {
    {"xgb", XgbLoss::Reg, FeatureType::Itervar},
    {"xgb_knob", XgbLoss::Reg, FeatureType::Knob},
    {"xgb_itervar", XgbLoss::Reg, FeatureType::Itervar},
    {"xgb_curve", XgbLoss::Reg, FeatureType::Curve},
    {"xgb_rank", XgbLoss::Rank, FeatureType::Itervar},
    {"xgb_rank_knob", XgbLoss::Rank, FeatureType::Knob},
    {"xgb_rank_itervar", XgbLoss::Rank, FeatureType::Itervar},
    {"xgb_rank_curve", XgbLoss::Rank, FeatureType::Curve},
    {"xgb_rank_binary", XgbLoss::RankBinary, FeatureType::Itervar},
    {"xgb_rank_binary_knob", XgbLoss::RankBinary, FeatureType::Knob},
    {"xgb_rank_binary_itervar", XgbLoss::RankBinary, FeatureType::Itervar},
    {"xgb_rank_binary_curve", XgbLoss::RankBinary, FeatureType::Curve},
};

}  // namespace

std::vector<std::string> tuner_names() {
  std::vector<std::string> names = {"random", "gridsearch", "ga"};
  for (const XgbVariant& v : kXgbVariants) names.emplace_back(v.name);
  return names;
}

std::unique_ptr<Tuner> make_tuner(const std::string& name, const Task& task, uint64_t seed) {
  if (name == "random") return std::make_unique<RandomTuner>(task, seed);
  if (name == "gridsearch") return std::make_unique<GridSearchTuner>(task);
  if (name == "ga") return std::make_unique<GATuner>(task, GAOptions{}, seed);
  for (const XgbVariant& v : kXgbVariants)
    if (name == v.name) return make_xgb_tuner(task, v.loss, v.feature, seed);

  std::string valid;
  for (const std::string& n : tuner_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw Error("unknown tuner '" + name + "' (valid: " + valid + ")");
}

}  // namespace tessera::autotvm
