// Tuners and callbacks against a synthetic measure layer: nothing is compiled,
// the "runner" reads each candidate's knob choices back from its schedule and
// returns a cost that is a known function of them, so the optimum is known.
#include "autotvm/tuner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "autotvm/callback.h"
#include "autotvm/ga_tuner.h"
#include "autotvm/history.h"
#include "autotvm/synthetic_task.h"
#include "ops/workloads.h"
#include "records/log_file.h"
#include "tessera/error.h"

namespace tessera::autotvm {
namespace {

using test::FakeBuilder;
using test::FakeRunner;
using test::Faults;
using test::SyntheticTask;
using test::kAxes;
using test::kTiles;

bool all_distinct(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return std::adjacent_find(v.begin(), v.end()) == v.end();
}

class AutotvmTunerEach : public ::testing::TestWithParam<std::string> {};

TEST_P(AutotvmTunerEach, MeasuresTheWholeSpaceOnceAndFindsTheBest) {
  SyntheticTask t({4, 5, 6}, {2, 3, 1});
  FakeBuilder builder;
  FakeRunner runner(t);
  FakeRunner confirm(t);  // the leaders\' re-measurement
  auto tuner = make_tuner(GetParam(), t.task(), 7);
  tuner->tune({.n_trial = 1000, .batch_size = 16}, {&builder, &runner, &confirm});
  EXPECT_EQ(tuner->trials(), t.size());  // stops at the space size
  EXPECT_EQ(static_cast<int64_t>(runner.measured.size()), t.size());
  EXPECT_TRUE(all_distinct(runner.measured));
  EXPECT_FALSE(tuner->has_next());
  EXPECT_EQ(tuner->best_config().index(), t.best_index());
  EXPECT_NEAR(tuner->best_flops(), t.task().flop() / 1e-4, 1);
}

TEST_P(AutotvmTunerEach, StopsAtNTrialWithoutRepeats) {
  SyntheticTask t({4, 5, 6}, {2, 3, 1});
  FakeBuilder builder;
  FakeRunner runner(t);
  FakeRunner confirm(t);  // the leaders\' re-measurement
  auto tuner = make_tuner(GetParam(), t.task(), 3);
  tuner->tune({.n_trial = 50, .batch_size = 16}, {&builder, &runner, &confirm});
  EXPECT_EQ(tuner->trials(), 50);
  EXPECT_EQ(runner.measured.size(), 50u);
  EXPECT_TRUE(all_distinct(runner.measured));
  // A second run goes on where the first stopped, still without repeats.
  tuner->tune({.n_trial = 30, .batch_size = 16}, {&builder, &runner, &confirm});
  EXPECT_EQ(tuner->trials(), 80);
  EXPECT_TRUE(all_distinct(runner.measured));
}

TEST_P(AutotvmTunerEach, EarlyStoppingEndsARunWithoutImprovement) {
  SyntheticTask t({4, 5, 6}, {2, 3, 1});
  FakeBuilder builder;
  FakeRunner runner(t,
                    /*flat=*/true);  // every config equal: the first is the best
  FakeRunner confirm(t, /*flat=*/true);
  auto tuner = make_tuner(GetParam(), t.task(), 1);
  tuner->tune({.n_trial = 100, .early_stopping = 10, .batch_size = 4}, {&builder, &runner, &confirm});
  EXPECT_EQ(tuner->best_trial(), 1);
  EXPECT_EQ(tuner->trials(),
            12);  // the first batch whose end is 10 trials past the best
}

TEST_P(AutotvmTunerEach, BadConfigsAreErrorResultsNotExceptions) {
  SyntheticTask t({4, 5, 6}, {2, 3, 1}, {.uninstantiable_knob0 = 1, .failing_knob1 = 4});
  FakeBuilder builder;
  FakeRunner runner(t);
  FakeRunner confirm(t);  // the leaders\' re-measurement
  std::map<measure::ErrorKind, int> kinds;
  Callback count = [&](const Tuner&, const std::vector<ConfigEntity>& configs,
                       const std::vector<measure::MeasureResult>& results) {
    ASSERT_EQ(configs.size(), results.size());
    for (const auto& r : results) ++kinds[r.error];
  };
  auto tuner = make_tuner(GetParam(), t.task(), 5);
  ASSERT_NO_THROW(tuner->tune({.n_trial = 1000}, {&builder, &runner, &confirm}, {count}));
  EXPECT_EQ(tuner->trials(), t.size());
  EXPECT_EQ(kinds[measure::ErrorKind::Instantiation], 5 * 6);  // knob 0 = 1
  EXPECT_EQ(kinds[measure::ErrorKind::RuntimeDevice],
            3 * 6);  // knob 1 = 4, knob 0 != 1
  EXPECT_EQ(tuner->best_config().index(), t.best_index());
}

TEST_P(AutotvmTunerEach, NeverProposesConfigsMarkedVisited) {
  SyntheticTask t({4, 5, 6}, {2, 3, 1});
  FakeBuilder builder;
  FakeRunner runner(t);
  FakeRunner confirm(t);  // the leaders\' re-measurement
  auto tuner = make_tuner(GetParam(), t.task(), 11);
  std::set<int64_t> resumed;
  for (int64_t i = 0; i < t.size(); i += 3) {
    tuner->mark_measured(i, {});
    resumed.insert(i);
  }
  tuner->tune({.n_trial = 1000}, {&builder, &runner, &confirm});
  EXPECT_EQ(tuner->trials(), t.size() - static_cast<int64_t>(resumed.size()));
  EXPECT_TRUE(all_distinct(runner.measured));
  for (int64_t i : runner.measured) EXPECT_EQ(resumed.count(i), 0u) << i;
}

TEST_P(AutotvmTunerEach, ReMeasuresTheLeadersAndKeepsTheConfirmedBest) {
  SyntheticTask t({4, 5, 6}, {2, 3, 1});
  FakeBuilder builder;
  FakeRunner runner(t);
  FakeRunner confirm(t);
  // The search's fastest config was a lucky measurement: timed again, it is slow.
  confirm.cost_override[t.best_index()] = 1e-3;
  int confirm_batches = 0;
  Callback watch = [&](const Tuner& tuner, const std::vector<ConfigEntity>& configs,
                       const std::vector<measure::MeasureResult>& results) {
    if (!tuner.confirming()) return;
    ++confirm_batches;
    ASSERT_EQ(configs.size(), 4u);
    for (const auto& r : results) EXPECT_EQ(r.costs.size(), 3u);  // one per round
  };
  auto tuner = make_tuner(GetParam(), t.task(), 7);
  tuner->tune({.n_trial = 1000, .batch_size = 16, .confirm_leaders = 4, .confirm_rounds = 3},
              {&builder, &runner, &confirm}, {watch});
  EXPECT_EQ(confirm_batches, 1);
  // 4 leaders, 3 rounds each: the optimum and three of its six neighbours
  // (synthetic cost 2e-4), which are now the fastest.
  ASSERT_EQ(confirm.measured.size(), 12u);
  std::map<int64_t, int> times;
  for (int64_t i : confirm.measured) ++times[i];
  EXPECT_EQ(times.size(), 4u);
  EXPECT_EQ(times[t.best_index()], 3);
  EXPECT_NE(tuner->best_config().index(), t.best_index());
  EXPECT_EQ(times.count(tuner->best_config().index()), 1u);
  EXPECT_NEAR(tuner->best_flops(), t.task().flop() / 2e-4, 1);
  EXPECT_TRUE(all_distinct(runner.measured));  // the search itself never repeats
}

TEST(AutotvmTuner, NoConfirmationWhenAskedForNone) {
  SyntheticTask t({4, 5, 6}, {2, 3, 1});
  FakeBuilder builder;
  FakeRunner runner(t);
  FakeRunner confirm(t);
  auto tuner = make_tuner("random", t.task(), 7);
  tuner->tune({.n_trial = 40, .confirm_leaders = 0}, {&builder, &runner, &confirm});
  EXPECT_TRUE(confirm.measured.empty());
  // Without a confirm runner the leaders are timed by the search's runner.
  FakeRunner only(t);
  auto second = make_tuner("random", t.task(), 8);
  second->tune({.n_trial = 40, .confirm_leaders = 2, .confirm_rounds = 2}, {&builder, &only});
  EXPECT_EQ(only.measured.size(), 44u);
}

// The space's fallback (the hand-written schedule) opens the first batch of
// every tuner, so that a tuned task is never measured below its default;
// a resumed log that has it is not measured again.
TEST(AutotvmTuner, TheFallbackIsMeasuredFirst) {
  SyntheticTask t({4, 5, 6}, {2, 3, 1});
  const int64_t fallback = t.task().space.fallback().index();
  for (const std::string name : {"random", "gridsearch", "ga", "xgb"}) {
    SCOPED_TRACE(name);
    FakeBuilder builder;
    FakeRunner runner(t);
    auto tuner = make_tuner(name, t.task(), 3);
    tuner->tune({.n_trial = 20, .confirm_leaders = 0}, {&builder, &runner});
    ASSERT_FALSE(runner.measured.empty());
    EXPECT_EQ(runner.measured.front(), fallback);
    EXPECT_EQ(std::count(runner.measured.begin(), runner.measured.end(), fallback), 1);
  }
  FakeBuilder builder;
  FakeRunner runner(t);
  auto resumed = make_tuner("random", t.task(), 3);
  measure::MeasureResult had;
  had.costs = {1e-3};
  resumed->mark_measured(fallback, had);
  resumed->tune({.n_trial = 20, .confirm_leaders = 0}, {&builder, &runner});
  EXPECT_EQ(std::count(runner.measured.begin(), runner.measured.end(), fallback), 0);
}

// A resumed log's best is the best so far, even when this run measures
// nothing faster and re-measures no leaders.
TEST(AutotvmTuner, ResumedBestCountsWithoutConfirmation) {
  SyntheticTask t({4, 5, 6}, {2, 3, 1});
  auto tuner = make_tuner("random", t.task(), 7);
  measure::MeasureResult fast, slow;
  fast.costs = {1e-3, 2e-3, 1.5e-3};  // ranked by the median, 1.5e-3
  slow.costs = {4e-3};
  tuner->mark_measured(3, slow);
  tuner->mark_measured(9, fast);
  EXPECT_EQ(tuner->best_config().index(), 9);
  EXPECT_DOUBLE_EQ(tuner->best_flops(), t.task().flop() / 1.5e-3);
  measure::MeasureResult negative;
  negative.costs = {-1.0};  // no measurement at all, never a best
  tuner->mark_measured(4, negative);
  EXPECT_EQ(tuner->best_config().index(), 9);
}

INSTANTIATE_TEST_SUITE_P(AutotvmTuner, AutotvmTunerEach, ::testing::ValuesIn(tuner_names()),
                         [](const auto& info) { return info.param; });

// The searching tuners find the optimum of a 512-config space before they
// enumerate it. Budgets: over seeds 0..39 the optimum came at trial <= 181 for
// GA with 32 per generation, <= 348 with the default 100, and <= 362 for every
// xgb variant (the knob-feature ones by ~130).
int64_t trials_to_optimum(const std::function<std::unique_ptr<Tuner>(const Task&)>& make, int n_trial) {
  SyntheticTask t({8, 8, 8}, {5, 2, 6});
  FakeBuilder builder;
  FakeRunner runner(t);
  FakeRunner confirm(t);  // the leaders\' re-measurement
  std::unique_ptr<Tuner> tuner = make(t.task());
  tuner->tune({.n_trial = n_trial, .batch_size = 16}, {&builder, &runner, &confirm});
  EXPECT_TRUE(all_distinct(runner.measured));
  return tuner->best_config().index() == t.best_index() ? tuner->best_trial() : -1;
}

TEST(AutotvmTuner, GAFindsTheOptimumWithinABudget) {
  for (uint64_t seed : {0, 1, 2}) {
    EXPECT_GT(
        trials_to_optimum(
            [&](const Task& task) { return std::make_unique<GATuner>(task, GAOptions{.pop_size = 32}, seed); }, 256),
        0)
        << "seed " << seed;
    EXPECT_GT(trials_to_optimum([&](const Task& task) { return make_tuner("ga", task, seed); }, 400), 0)
        << "seed " << seed;
  }
}

TEST(AutotvmTuner, XgbTunersFindTheOptimumWithinABudget) {
  for (const std::string& name : tuner_names()) {
    if (name.rfind("xgb", 0) != 0) continue;
    for (uint64_t seed : {0, 1})
      EXPECT_GT(trials_to_optimum([&](const Task& task) { return make_tuner(name, task, seed); }, 400), 0)
          << name << " seed " << seed;
  }
}

TEST(AutotvmTuner, GridSearchGoesInIndexOrder) {
  SyntheticTask t({4, 5, 6}, {2, 3, 1});
  FakeBuilder builder;
  FakeRunner runner(t);
  FakeRunner confirm(t);  // the leaders\' re-measurement
  auto tuner = make_tuner("gridsearch", t.task());
  tuner->mark_measured(1, {});
  tuner->tune({.n_trial = 5}, {&builder, &runner, &confirm});
  EXPECT_EQ(runner.measured, (std::vector<int64_t>{0, 2, 3, 4, 5}));
}

TEST(AutotvmTuner, GAOptionsOutOfRangeAreAnError) {
  SyntheticTask t({4, 5, 6}, {2, 3, 1});
  EXPECT_THROW(GATuner(t.task(), {.pop_size = 0}), Error);
  EXPECT_THROW(GATuner(t.task(), {.mutation_prob = 1.5}), Error);
}

TEST(AutotvmTuner, AllSeedTunerNamesAreKnown) {
  const std::vector<std::string> names = tuner_names();
  for (const char* name : {"xgb", "xgb_knob", "xgb_itervar", "xgb_curve", "xgb_rank", "xgb_rank_knob",
                           "xgb_rank_itervar", "xgb_rank_curve", "xgb_rank_binary", "xgb_rank_binary_knob",
                           "xgb_rank_binary_itervar", "xgb_rank_binary_curve", "ga", "random", "gridsearch"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  EXPECT_EQ(names.size(), 15u);
}

TEST(AutotvmTuner, UnknownTunerNameListsTheValidOnes) {
  SyntheticTask t({2, 2, 2}, {0, 0, 0});
  try {
    make_tuner("xgboost", t.task());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("xgboost"), std::string::npos) << what;
    for (const std::string& name : tuner_names()) EXPECT_NE(what.find(name), std::string::npos) << what;
  }
}

TEST(AutotvmCallback, ProgressLinesHaveTheSeedFormatAndEndWithDone) {
  SyntheticTask t({4, 5, 6}, {2, 3, 1});
  FakeBuilder builder;
  FakeRunner runner(t);
  FakeRunner confirm(t);  // the leaders\' re-measurement
  std::ostringstream out;  // not a terminal: one plain line per batch
  auto tuner = make_tuner("gridsearch", t.task());
  tuner->tune({.n_trial = 40, .batch_size = 16}, {&builder, &runner, &confirm}, {progress_bar(40, "[Task  1/12] ", out)});

  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u) << out.str();  // batches of 16, 16, 8, then Done
  const std::regex progress(
      R"(^\[Task  1/12\]  Current/Best: +[0-9.]+/ *[0-9.]+ GFLOPS \| Progress: \((\d+)/40\) \| [0-9.]+ s)");
  const int expected[] = {16, 32, 40, 40};
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(lines[i], m, progress)) << lines[i];
    EXPECT_EQ(std::stoi(m[1]), expected[i]) << lines[i];
  }
  EXPECT_TRUE(std::regex_search(lines[0], std::regex(R"( s \| ETA \d+ s$)"))) << lines[0];
  EXPECT_TRUE(std::regex_search(lines[3], std::regex(R"(\(40/40\) \| [0-9.]+ s Done\.$)"))) << lines[3];
  // Best is the tuner's best so far, in GFLOPS with two decimals.
  EXPECT_NE(lines[3].find(fmt::format("/{:7.2f} GFLOPS", tuner->best_flops() / 1e9)), std::string::npos) << lines[3];
}

class ScratchFile {
 public:
  ScratchFile()
      : path_((std::filesystem::temp_directory_path() /
               ("tessera-tuner-test-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".jsonl"))
                  .string()) {
    std::filesystem::remove(path_);
  }
  ~ScratchFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(AutotvmCallback, LogToFileWritesOneRecordPerTrial) {
  SyntheticTask t({4, 5, 6}, {2, 3, 1}, {.uninstantiable_knob0 = 3});
  FakeBuilder builder;
  FakeRunner runner(t);
  FakeRunner confirm(t);  // the leaders\' re-measurement
  ScratchFile file;
  auto tuner = make_tuner("random", t.task(), 2);
  tuner->tune({.n_trial = 37, .batch_size = 8}, {&builder, &runner, &confirm}, {log_to_file(file.path())});

  std::ostringstream warnings;
  std::vector<records::Record> records = records::load_records(file.path(), warnings);
  EXPECT_EQ(warnings.str(), "");
  // 37 trials, then the 5 leaders re-measured, marked confirmed.
  ASSERT_EQ(records.size(), 42u);
  std::vector<records::Record> leaders(records.begin() + 37, records.end());
  records.resize(37);
  std::set<int64_t> indices;
  for (const records::Record& r : records) {
    EXPECT_FALSE(r.confirmed);
    EXPECT_EQ(r.workload_key, t.task().workload_key());
    EXPECT_EQ(r.task_name, "synthetic_dense.test");
    EXPECT_EQ(r.target, t.task().target.str());
    EXPECT_EQ(r.workload, workload_json(t.task()));  // {"op": ..., "args": ...}
    ASSERT_TRUE(r.config_index.has_value());
    indices.insert(*r.config_index);
    const ConfigEntity config = t.task().space.get(*r.config_index);
    EXPECT_EQ(r.config, config.to_json());
    if (config.choices()[0] == 3) {
      EXPECT_EQ(r.result.error, measure::ErrorKind::Instantiation);
      EXPECT_TRUE(r.trace.steps().empty());
    } else {
      EXPECT_TRUE(r.valid());
      EXPECT_EQ(r.trace.steps().size(), 3u);
      EXPECT_DOUBLE_EQ(r.result.costs.at(0), t.cost(config.choices()));
    }
  }
  EXPECT_EQ(indices.size(), 37u);
  // The leaders are the 5 fastest valid trials, each timed once per round.
  std::vector<std::pair<double, int64_t>> fastest;
  for (const records::Record& r : records)
    if (r.valid()) fastest.emplace_back(r.result.costs.at(0), *r.config_index);
  std::sort(fastest.begin(), fastest.end());
  std::set<int64_t> expected_leaders, logged_leaders;
  for (size_t i = 0; i < 5; ++i) expected_leaders.insert(fastest.at(i).second);
  for (const records::Record& r : leaders) {
    EXPECT_TRUE(r.confirmed);
    EXPECT_TRUE(r.valid());
    EXPECT_EQ(r.result.costs.size(), 3u);  // confirm_rounds
    logged_leaders.insert(*r.config_index);
  }
  EXPECT_EQ(logged_leaders, expected_leaders);

  // A second run appends.
  auto more = make_tuner("random", t.task(), 3);
  more->tune({.n_trial = 5, .confirm_leaders = 0}, {&builder, &runner, &confirm}, {log_to_file(file.path())});
  EXPECT_EQ(records::load_records(file.path(), warnings).size(), 47u);
}

TEST(AutotvmCallback, LogToFileNamesAPathItCannotOpen) {
  try {
    log_to_file("/nonexistent-dir/tuning.log");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/tuning.log"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::autotvm
