#include "records/pick_best.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <thread>

#include "records/apply_history_best.h"
#include "records/log_file.h"
#include "records/records_test_util.h"

namespace tessera::records {
namespace {

using measure::ErrorKind;
using testing::make_record;
using testing::ScratchDir;

Record tagged(Record r, int64_t index) {
  r.config_index = index;
  return r;
}

// Key "a" on llvm: index 2 is best by median (min cost would pick index 1);
// index 3 is faster but errored; index 4 "succeeded" without costs.
std::vector<Record> history() {
  return {
      tagged(make_record("a", "llvm", {3e-3, 3e-3}), 0),
      tagged(make_record("a", "llvm", {0.5e-3, 9e-3}), 1),
      tagged(make_record("a", "llvm", {2e-3, 2.2e-3}), 2),
      tagged(make_record("a", "llvm", {1e-6}, ErrorKind::WrongAnswer), 3),
      tagged(make_record("a", "llvm", {}), 4),
      tagged(make_record("b", "llvm", {}, ErrorKind::RunTimeout), 0),
      tagged(make_record("a", "llvm -mcpu=znver3", {4e-3}), 5),
      tagged(make_record("b", "llvm", {7e-3}), 1),
  };
}

TEST(RecordsPickBest, LowestMedianCostAmongValidRecordsOnePerKeyAndTarget) {
  std::vector<Record> best = pick_best(history());
  ASSERT_EQ(best.size(), 3u);
  EXPECT_EQ(best[0].workload_key, "a");
  EXPECT_EQ(best[0].target, "llvm");
  EXPECT_EQ(best[0].config_index, 2);
  EXPECT_EQ(best[1].target, "llvm -mcpu=znver3");
  EXPECT_EQ(best[1].config_index, 5);
  EXPECT_EQ(best[2].workload_key, "b");
  EXPECT_EQ(best[2].config_index, 1);
}

TEST(RecordsPickBest, MedianIgnoresOneSlowRepeatWhereTheMeanWouldNot) {
  // Mean: 0 -> 1.33e-3, 1 -> 1.2e-3; median: 0 -> 1.0e-3, 1 -> 1.2e-3.
  std::vector<Record> runs = {tagged(make_record("a", "llvm", {1.0e-3, 1.0e-3, 2.0e-3}), 0),
                              tagged(make_record("a", "llvm", {1.2e-3, 1.2e-3, 1.2e-3}), 1)};
  EXPECT_EQ(pick_best(runs).at(0).config_index, 0);
}

TEST(RecordsPickBest, ConfirmedRecordsOutrankSearchMeasurements) {
  // Index 0 looked fastest in one short search run; the leaders' re-measurement
  // found index 1 faster than index 2.
  Record lucky = tagged(make_record("a", "llvm", {0.5e-3}), 0);
  Record first = tagged(make_record("a", "llvm", {1.1e-3, 1.0e-3, 1.2e-3}), 1);
  Record second = tagged(make_record("a", "llvm", {1.3e-3, 1.2e-3, 1.4e-3}), 2);
  first.confirmed = second.confirmed = true;
  EXPECT_EQ(pick_best({lucky, second, first}).at(0).config_index, 1);
  EXPECT_EQ(pick_best({lucky}).at(0).config_index, 0);  // unconfirmed records still count alone
  EXPECT_TRUE(better(second, lucky));
  EXPECT_FALSE(better(lucky, second));
}

TEST(RecordsPickBest, TiesGoToTheEarliestMeasurement) {
  std::vector<Record> tie = {tagged(make_record("a", "llvm", {1e-3}, ErrorKind::None, 200.0), 0),
                             tagged(make_record("a", "llvm", {1e-3}, ErrorKind::None, 100.0), 1),
                             tagged(make_record("a", "llvm", {1e-3}, ErrorKind::None, 300.0), 2)};
  EXPECT_EQ(pick_best(tie).at(0).config_index, 1);
}

TEST(RecordsPickBest, KeysWithOnlyErroredRecordsAreLeftOut) {
  std::vector<Record> failed = {make_record("a", "llvm", {}, ErrorKind::CompileHost),
                                make_record("a", "llvm", {1e-3}, ErrorKind::RuntimeDevice)};
  EXPECT_TRUE(pick_best(failed).empty());
}

TEST(RecordsPickBest, FileToFileSkipsDamagedLinesAndWritesOneLinePerTask) {
  ScratchDir dir;
  const std::string in = dir.file("tune.log"), out = dir.file("best.log");
  RecordWriter(in).append(history());
  { std::ofstream(in, std::ios::app) << "garbage\n"; }
  std::ostringstream warnings;
  EXPECT_EQ(pick_best_file(in, out, warnings), 3u);
  EXPECT_NE(warnings.str().find(in + ":9: skipped damaged record"), std::string::npos) << warnings.str();
  std::ostringstream no_warnings;
  std::vector<Record> best = load_records(out, no_warnings);
  EXPECT_EQ(no_warnings.str(), "");
  ASSERT_EQ(best.size(), 3u);
  EXPECT_EQ(best[0].config_index, 2);
}

TEST(RecordsApplyHistoryBest, ReturnsTheBestValidRecordForTheTarget) {
  ApplyHistoryBest dispatch(history());
  EXPECT_EQ(dispatch.size(), 3u);
  EXPECT_EQ(dispatch.query("a", "llvm")->config_index, 2);
  EXPECT_EQ(dispatch.query("a", "llvm -mcpu=znver3")->config_index, 5);
  EXPECT_FALSE(dispatch.query("a", "cuda").has_value());
  std::ostringstream warnings;
  EXPECT_EQ(dispatch.lookup("b", "llvm", "dense 64x64x64", warnings)->config_index, 1);
  EXPECT_EQ(warnings.str(), "");
}

TEST(RecordsApplyHistoryBest, WarnsOncePerMissingWorkloadNamingIt) {
  ApplyHistoryBest dispatch(history());
  std::ostringstream warnings;
  const std::string conv = "conv2d_nchwc data=(1,8,56,56,8) kernel=(8,8,3,3,8,8)";
  EXPECT_FALSE(dispatch.lookup("c", "llvm", conv, warnings).has_value());
  EXPECT_FALSE(dispatch.lookup("c", "llvm", conv, warnings).has_value());
  EXPECT_FALSE(dispatch.lookup("d", "llvm", "dense 1x1000x512", warnings).has_value());
  EXPECT_FALSE(dispatch.lookup("d", "llvm", "dense 1x1000x512", warnings).has_value());
  EXPECT_EQ(warnings.str(),
            "warning: no tuning record for workload " + conv +
                " (key c) on target llvm; using the fallback configuration, which may be much slower\n"
                "warning: no tuning record for workload dense 1x1000x512 (key d) on target llvm; using the "
                "fallback configuration, which may be much slower\n");
}

TEST(RecordsApplyHistoryBest, ConcurrentLookupsWarnOnce) {
  ApplyHistoryBest dispatch(history());
  std::ostringstream warnings;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        dispatch.lookup("missing", "llvm", "softmax 1x1000", warnings);
        dispatch.lookup("a", "llvm", "dense", warnings);
      }
    });
  for (auto& t : threads) t.join();
  std::string text = warnings.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
}

TEST(RecordsApplyHistoryBest, FromFileLoadsTheLog) {
  ScratchDir dir;
  const std::string path = dir.file("tune.log");
  RecordWriter(path).append(history());
  std::ostringstream warnings;
  ApplyHistoryBest dispatch = ApplyHistoryBest::from_file(path, warnings);
  EXPECT_EQ(dispatch.query("a", "llvm")->config_index, 2);
}


}  // namespace
}  // namespace tessera::records
