// Logs of earlier runs feed a tuner: its own configs count as measured, other
// tasks' records warm-start the model, and a record that names no buildable
// task is skipped with a warning instead of stopping the run.
#include "autotvm/history.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "autotvm/task.h"
#include "tessera/error.h"

namespace tessera::autotvm {
namespace {

Task dense_task(int64_t m, const target::Target& target = target::Target::host()) {
  ops::OpArgs a;
  a.input = {m, 16};
  a.weight = {32, 16};
  return create_task("dense", a, target);
}

std::vector<records::Record> fake_log(const Task& task, int n) {
  std::vector<records::Record> log;
  for (int i = 0; i < n; ++i) {
    ConfigEntity c = task.space.get(i);
    records::Record r;
    r.workload_key = task.workload_key();
    r.task_name = task.name();
    r.workload = workload_json(task);
    r.target = task.target.str();
    r.config_index = c.index();
    r.config = c.to_json();
    r.trace = task.instantiate(c);
    r.result.costs = {1e-5 * (i + 1)};
    log.push_back(r);
  }
  return log;
}

TEST(AutotvmHistory, OwnConfigsAreMarkedAndOtherTasksWarmStartTheModel) {
  Task a = dense_task(4), b = dense_task(8);
  auto log = fake_log(a, 6);
  auto more = fake_log(b, 3);
  log.insert(log.end(), more.begin(), more.end());
  records::Record broken = log.front();
  broken.workload_key = "not-a-task";
  broken.workload = {{"op", "teleport"}, {"args", nlohmann::json::object()}};
  log.push_back(broken);

  auto tuner = make_tuner("xgb_itervar", b, 1);
  std::ostringstream warnings;
  EXPECT_EQ(load_history(*tuner, b, log, /*other_tasks=*/true, warnings), 3);
  EXPECT_NE(warnings.str().find("teleport"), std::string::npos) << warnings.str();
  for (const auto& c : tuner->next_batch(static_cast<int>(b.space.size())))
    EXPECT_GE(c.index(), 3) << "config " << c.index() << " was already in the log";
}

// Results that failed for reasons of the run (a timeout, say, from --timeout
// too short) are not taken as measured: a resumed run measures them again.
// Failures of the schedule itself (wrong answer, compile error) are.
TEST(AutotvmHistory, InconclusiveResultsAreMeasuredAgainOnResume) {
  Task b = dense_task(8);
  auto log = fake_log(b, 4);
  log[0].result = {};
  log[0].result.error = measure::ErrorKind::RunTimeout;
  log[1].result = {};
  log[1].result.error = measure::ErrorKind::BuildTimeout;
  log[2].result = {};  // no error, no cost: --repeat 0 once wrote such results
  log[3].result = {};
  log[3].result.error = measure::ErrorKind::WrongAnswer;
  auto tuner = make_tuner("random", b, 1);
  std::ostringstream warnings;
  EXPECT_EQ(load_history(*tuner, b, log, /*other_tasks=*/false, warnings), 1);
  std::set<int64_t> proposed;
  for (const auto& c : tuner->next_batch(static_cast<int>(b.space.size()))) proposed.insert(c.index());
  for (int64_t again : {0, 1, 2}) EXPECT_EQ(proposed.count(again), 1u) << again;
  EXPECT_EQ(proposed.count(3), 0u);
}

TEST(AutotvmHistory, WithoutOtherTasksOnlyTheOwnConfigsCount) {
  Task a = dense_task(4), b = dense_task(8);
  auto log = fake_log(a, 5);
  auto tuner = make_tuner("random", b, 1);
  std::ostringstream warnings;
  EXPECT_EQ(load_history(*tuner, b, log, /*other_tasks=*/false, warnings), 0);
  EXPECT_TRUE(warnings.str().empty());
}

TEST(AutotvmHistory, ModelsLearnFromEveryEarlierTaskEvenly) {
  // 9 records of task a, then 3 of b, then 2 of c; own task x throughout.
  std::vector<std::string> keys;
  for (int i = 0; i < 9; ++i) keys.push_back("a");
  keys.push_back("x");
  for (int i = 0; i < 3; ++i) keys.push_back("b");
  keys.push_back("x");
  keys.insert(keys.end(), {"c", "c"});
  // A share of 2 per task: a at stride 5 (positions 0, 5), b at stride 2
  // (10, 12), c whole (14, 15), x whole (9, 13).
  EXPECT_EQ(rows_to_learn(keys, "x", 6), (std::vector<size_t>{0, 5, 9, 10, 12, 13, 14, 15}));
  // Room for all: everything, in order.
  std::vector<size_t> all(keys.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  EXPECT_EQ(rows_to_learn(keys, "x", 100), all);
  // Less room than tasks: still one row of each.
  EXPECT_EQ(rows_to_learn(keys, "x", 1), (std::vector<size_t>{0, 9, 10, 13, 14}));
}

TEST(AutotvmHistory, ALeadersReMeasurementIsNoNewConfig) {
  Task b = dense_task(8);
  auto log = fake_log(b, 4);
  records::Record again = log[1];
  again.confirmed = true;
  log.push_back(again);
  auto tuner = make_tuner("random", b, 1);
  std::ostringstream warnings;
  EXPECT_EQ(load_history(*tuner, b, log, /*other_tasks=*/false, warnings), 4);
}

TEST(AutotvmHistory, RecordsOfAnotherVersionOfTheSpaceAreNotReused) {
  Task b = dense_task(8);
  auto log = fake_log(b, 4);
  // As if the template had another knob when these were logged: index 2 and 3
  // now name other configs.
  log[2].config["retired_knob"] = 1;
  log[3].config = b.space.get(0).to_json();
  auto tuner = make_tuner("random", b, 1);
  std::ostringstream warnings;
  EXPECT_EQ(load_history(*tuner, b, log, /*other_tasks=*/false, warnings), 2);
  EXPECT_NE(warnings.str().find("2 records of " + b.describe()), std::string::npos) << warnings.str();
  std::set<int64_t> proposed;
  for (const auto& c : tuner->next_batch(static_cast<int>(b.space.size()))) proposed.insert(c.index());
  EXPECT_EQ(proposed.count(2), 1u);
  EXPECT_EQ(proposed.count(3), 1u);
  EXPECT_EQ(proposed.count(0), 0u);
}

TEST(AutotvmHistory, OnlyRecordsOfAMatchingTargetAreResumed) {
  // Named by CPU, so that the test does not depend on the host's ISA.
  Task b = dense_task(8, target::Target::parse("llvm -mcpu=haswell -threads=2"));
  auto log = fake_log(b, 6);
  log[0].target = log[1].target = "llvm -mcpu=skylake-avx512 -threads=2";  // another ISA
  log[2].target = "llvm -mcpu=haswell -threads=1";                         // another thread count
  log[3].target = "llvm -mcpu=znver3 -threads=2";                          // another CPU, same vector unit
  log[4].target = "llvm -mcpu=haswell";                                    // written before -threads=
  auto tuner = make_tuner("random", b, 1);
  std::ostringstream warnings;
  EXPECT_EQ(load_history(*tuner, b, log, /*other_tasks=*/false, warnings), 3);
  EXPECT_NE(warnings.str().find("note: 1 records used for " + b.describe() + " were recorded with no thread count"),
            std::string::npos)
      << warnings.str();
  std::set<int64_t> proposed;
  for (const auto& c : tuner->next_batch(static_cast<int>(b.space.size()))) proposed.insert(c.index());
  for (int64_t measured : {3, 4, 5}) EXPECT_EQ(proposed.count(measured), 0u) << measured;
  for (int64_t other : {0, 1, 2}) EXPECT_EQ(proposed.count(other), 1u) << other;
}

TEST(AutotvmHistory, DispatchUsesTheRecordedScheduleWhenTheConfigNoLongerFits) {
  Task b = dense_task(8);
  auto log = fake_log(b, 3);  // index 0 is the fastest
  log[0].config["retired_knob"] = 1;
  records::ApplyHistoryBest history(log);
  std::ostringstream warnings;
  Dispatched d = dispatch(b, history, warnings);
  ASSERT_TRUE(d.record.has_value());
  EXPECT_EQ(d.record->config_index, 0);
  EXPECT_EQ(d.trace.dump(), log[0].trace.dump());
  EXPECT_NE(warnings.str().find("does not fit the current template"), std::string::npos) << warnings.str();

  // Nothing to fall back on in the best record: say so, and run the next best.
  log[0].trace = schedule::Trace();
  records::ApplyHistoryBest broken(log);
  std::ostringstream broken_warnings;
  Dispatched next = dispatch(b, broken, broken_warnings);
  ASSERT_TRUE(next.record.has_value());
  EXPECT_EQ(next.record->config_index, 1);
  EXPECT_EQ(next.trace.dump(), log[1].trace.dump());
  EXPECT_NE(broken_warnings.str().find("warning: a record of " + b.describe()), std::string::npos)
      << broken_warnings.str();

  // No record usable: the fallback config, with a warning.
  for (auto& r : log) {
    r.config["retired_knob"] = 1;
    r.trace = schedule::Trace();
  }
  records::ApplyHistoryBest none(log);
  std::ostringstream none_warnings;
  Dispatched fallback = dispatch(b, none, none_warnings);
  EXPECT_FALSE(fallback.record.has_value());
  EXPECT_EQ(fallback.trace.dump(), b.instantiate(b.space.fallback()).dump());
  EXPECT_NE(none_warnings.str().find("none of the 3 records"), std::string::npos) << none_warnings.str();
}

// A crafted record whose trace does not replay (split lengths whose product
// overflows) is refused at dispatch with a warning, not handed to the
// compiler; the next best runs.
TEST(AutotvmHistory, DispatchFallsBackFromATraceThatDoesNotReplay) {
  Task b = dense_task(8);
  auto log = fake_log(b, 3);
  log[0].config = nullptr;
  log[0].trace = schedule::Trace().split(b.workload.dag.outputs()[0]->name, "i", {int64_t{1} << 32, int64_t{1} << 32});
  records::ApplyHistoryBest history(log);
  std::ostringstream warnings;
  Dispatched d = dispatch(b, history, warnings);
  ASSERT_TRUE(d.record.has_value());
  EXPECT_EQ(d.record->config_index, 1);
  EXPECT_NE(warnings.str().find("cannot be used"), std::string::npos) << warnings.str();
}

}  // namespace
}  // namespace tessera::autotvm
