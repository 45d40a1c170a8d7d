#include "records/pick_best.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <thread>

#include "records/apply_history_best.h"
#include "records/log_file.h"
#include "records/records_test_util.h"
#include "records/target_match.h"

namespace tessera::records {
namespace {

using measure::ErrorKind;
using testing::make_record;
using testing::ScratchDir;

Record tagged(Record r, int64_t index) {
  r.config_index = index;
  return r;
}

// Targets named by CPU, so that no test depends on the host's ISA.
const std::string kAvx2 = "llvm -mcpu=haswell -threads=1";
const std::string kAvx512 = "llvm -mcpu=skylake-avx512 -threads=1";

target::Target target(const std::string& text) { return target::Target::parse(text); }

// Key "a" on AVX2: index 2 is best by median (min cost would pick index 1);
// index 3 is faster but errored; index 4 "succeeded" without costs.
std::vector<Record> history() {
  return {
      tagged(make_record("a", kAvx2, {3e-3, 3e-3}), 0),
      tagged(make_record("a", kAvx2, {0.5e-3, 9e-3}), 1),
      tagged(make_record("a", kAvx2, {2e-3, 2.2e-3}), 2),
      tagged(make_record("a", kAvx2, {1e-6}, ErrorKind::WrongAnswer), 3),
      tagged(make_record("a", kAvx2, {}), 4),
      tagged(make_record("b", kAvx2, {}, ErrorKind::RunTimeout), 0),
      tagged(make_record("a", kAvx512, {4e-3}), 5),
      tagged(make_record("b", kAvx2, {7e-3}), 1),
  };
}

TEST(RecordsPickBest, LowestMedianCostAmongValidRecordsOnePerKeyAndTarget) {
  std::vector<Record> best = pick_best(history());
  ASSERT_EQ(best.size(), 3u);
  EXPECT_EQ(best[0].workload_key, "a");
  EXPECT_EQ(best[0].target, kAvx2);
  EXPECT_EQ(best[0].config_index, 2);
  EXPECT_EQ(best[1].target, kAvx512);
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

TEST(RecordsPickBest, GroupsByVectorUnitAndThreadsNotByCpuName) {
  // Zen 3 and Haswell run the same AVX2 code: one best between them. Another
  // thread count, or a record stating none, is a group of its own.
  std::vector<Record> log = {tagged(make_record("a", kAvx2, {3e-3}), 0),
                             tagged(make_record("a", "llvm -mcpu=znver3 -threads=1", {2e-3}), 1),
                             tagged(make_record("a", "llvm -mcpu=znver3 -threads=2", {1e-3}), 2),
                             tagged(make_record("a", "llvm -mcpu=znver3", {0.5e-3}), 3)};
  std::vector<Record> best = pick_best(log);
  ASSERT_EQ(best.size(), 3u);
  EXPECT_EQ(best[0].config_index, 1);
  EXPECT_EQ(best[1].config_index, 2);
  EXPECT_EQ(best[2].config_index, 3);
}

TEST(RecordsPickBest, ATargetThatDoesNotParseIsKeptApartByItsText) {
  std::vector<Record> log = {tagged(make_record("a", "rocm", {1e-3}), 0), tagged(make_record("a", kAvx2, {2e-3}), 1)};
  EXPECT_EQ(pick_best(log).size(), 2u);
  RecordTargets targets;
  EXPECT_EQ(targets.of(log[0]), nullptr);
  EXPECT_FALSE(targets.applies(log[0], target(kAvx2)));
}

TEST(RecordsPickBest, FileToFileKeepsOnlyTheGivenTarget) {
  ScratchDir dir;
  const std::string in = dir.file("tune.log"), out = dir.file("best.log");
  std::vector<Record> log = history();
  log.push_back(tagged(make_record("a", "llvm -mcpu=haswell -threads=2", {1e-3}), 6));
  RecordWriter(in).append(log);
  std::ostringstream warnings;
  EXPECT_EQ(pick_best_file(in, out, warnings, target(kAvx512)), 1u);
  EXPECT_EQ(load_records(out, warnings).at(0).config_index, 5);
  EXPECT_EQ(pick_best_file(in, out, warnings, target("llvm -mcpu=znver3 -threads=2")), 1u);
  EXPECT_EQ(load_records(out, warnings).at(0).config_index, 6);
  // No thread count given: every thread count of that vector unit.
  EXPECT_EQ(pick_best_file(in, out, warnings, target("llvm -mcpu=znver3")), 3u);
  EXPECT_EQ(pick_best_file(in, out, warnings, target("llvm -mcpu=x86-64")), 0u);
  EXPECT_EQ(warnings.str(), "");
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
  EXPECT_EQ(dispatch.query("a", target(kAvx2))->config_index, 2);
  EXPECT_EQ(dispatch.query("a", target(kAvx512))->config_index, 5);
  EXPECT_FALSE(dispatch.query("a", target("cuda")).has_value());
  std::ostringstream warnings;
  EXPECT_EQ(dispatch.lookup("b", target(kAvx2), "dense 64x64x64", warnings)->config_index, 1);
  EXPECT_EQ(warnings.str(), "");
}

TEST(RecordsApplyHistoryBest, MatchesByVectorUnitAndThreadsNotByCpuOrFeatures) {
  ApplyHistoryBest dispatch(history());
  std::ostringstream warnings;
  EXPECT_EQ(dispatch.lookup("a", target("llvm -mcpu=znver3 -mattr=+avx2,+fma,-sha -threads=1"), "dense", warnings)
                ->config_index,
            2);
  EXPECT_EQ(warnings.str(), "");
  EXPECT_FALSE(dispatch.query("a", target("llvm -mcpu=haswell -threads=2")).has_value());
  EXPECT_FALSE(dispatch.query("a", target("llvm -mcpu=x86-64 -threads=1")).has_value());
}

TEST(RecordsApplyHistoryBest, FallbackWarningSaysWhichTargetsHaveRecords) {
  ApplyHistoryBest dispatch(history());
  std::ostringstream warnings;
  EXPECT_FALSE(dispatch.lookup("a", target("llvm -mcpu=znver3 -threads=2"), "dense 64x64x64", warnings));
  EXPECT_EQ(warnings.str(),
            "warning: Config for target=llvm avx2 256-bit threads=2, workload=dense 64x64x64 (key a) is missing; "
            "records exist for this workload on llvm avx2 256-bit threads=1, llvm avx512 512-bit threads=1. "
            "A fallback configuration is used, which may bring great performance regression.\n");
}

TEST(RecordsApplyHistoryBest, RecordsStatingNoThreadCountApplyToAnyWithANote) {
  // A log from before records carried -threads=, and a newer record for 2 threads.
  std::vector<Record> log = {tagged(make_record("a", "llvm -mcpu=haswell", {1e-3}), 0),
                             tagged(make_record("a", "llvm -mcpu=haswell -threads=2", {3e-3}), 1)};
  ApplyHistoryBest dispatch(log);
  std::ostringstream warnings;
  EXPECT_EQ(dispatch.lookup("a", target("llvm -mcpu=znver3 -threads=2"), "dense", warnings)->config_index, 1);
  EXPECT_EQ(warnings.str(), "");  // its own thread count first, without a note
  EXPECT_EQ(dispatch.lookup("a", target("llvm -mcpu=znver3 -threads=4"), "dense", warnings)->config_index, 0);
  EXPECT_EQ(warnings.str(),
            "note: the tuning record of workload dense (key a) was recorded with no thread count (a log from "
            "before records carried -threads=), used for threads=4\n");
  EXPECT_FALSE(dispatch.query("a", target("llvm -mcpu=skylake-avx512 -threads=4")).has_value());
}

TEST(RecordsApplyHistoryBest, WarnsOncePerMissingWorkloadNamingIt) {
  ApplyHistoryBest dispatch(history());
  std::ostringstream warnings;
  const std::string conv = "conv2d_nchwc data=(1,8,56,56,8) kernel=(8,8,3,3,8,8)";
  EXPECT_FALSE(dispatch.lookup("c", target(kAvx2), conv, warnings).has_value());
  EXPECT_FALSE(dispatch.lookup("c", target(kAvx2), conv, warnings).has_value());
  EXPECT_FALSE(dispatch.lookup("d", target(kAvx2), "dense 1x1000x512", warnings).has_value());
  EXPECT_FALSE(dispatch.lookup("d", target(kAvx2), "dense 1x1000x512", warnings).has_value());
  EXPECT_EQ(warnings.str(),
            "warning: Config for target=llvm avx2 256-bit threads=1, workload=" + conv +
                " (key c) is missing. A fallback configuration is used, which may bring great performance "
                "regression.\n"
                "warning: Config for target=llvm avx2 256-bit threads=1, workload=dense 1x1000x512 (key d) is "
                "missing. A fallback configuration is used, which may bring great performance regression.\n");
}

TEST(RecordsApplyHistoryBest, ConcurrentLookupsWarnOnce) {
  ApplyHistoryBest dispatch(history());
  std::ostringstream warnings;
  const target::Target avx2 = target(kAvx2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        dispatch.lookup("missing", avx2, "softmax 1x1000", warnings);
        dispatch.lookup("a", avx2, "dense", warnings);
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
  EXPECT_EQ(dispatch.query("a", target(kAvx2))->config_index, 2);
}


}  // namespace
}  // namespace tessera::records
