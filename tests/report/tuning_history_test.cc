// A tuning log read back as the report draws it, from records written here
// with known costs, times and errors: per task its trials in order, the
// best (a confirmed leader outranks a quicker unconfirmed run), errors by
// kind, a template task's flop count from its operator's shapes; the task
// scheduler's estimate summed by hand; damaged lines counted, not fatal.
#include "report/tuning_history.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "records/log_file.h"
#include "target/target.h"

namespace tessera::report {
namespace {

records::Record record(const std::string& key, const std::string& task, double cost, double timestamp,
                       measure::ErrorKind error = measure::ErrorKind::None, bool confirmed = false) {
  records::Record r;
  r.workload_key = key;
  r.task_name = task;
  r.target = "llvm -threads=1";
  if (task == "autoschedule") {
    r.workload = {{"nodes", "conv + relu"}};
  } else {
    // conv2d 1x8x10x10 by 16x8x3x3, pad 1: 2 * 16 * 10 * 10 * 8 * 3 * 3 = 230400 flop.
    r.workload = {{"op", "conv2d"},
                  {"args", {{"input", {1, 8, 10, 10}}, {"weight", {16, 8, 3, 3}}, {"pad", 1}, {"stride", 1}}}};
  }
  r.result.error = error;
  if (error == measure::ErrorKind::None) r.result.costs = {cost, cost};
  r.result.timestamp = timestamp;
  r.confirmed = confirmed;
  return r;
}

struct Log {
  std::string path = "/tmp/tessera-history-" + std::to_string(getpid()) + ".log";
  Log() { std::filesystem::remove(path); }
  ~Log() { std::filesystem::remove(path); }
};

TEST(TuningHistory, TrialsBestsErrorsAndTheEstimateAreTheLogs) {
  Log log;
  {
    records::RecordWriter w(log.path);
    w.append(record("aaaa", "conv2d_NCHWc.x86", 4e-3, 1000));
    w.append(record("bbbb", "autoschedule", 2e-3, 1001));
    w.append(record("aaaa", "conv2d_NCHWc.x86", 0, 1002, measure::ErrorKind::CompileHost));
    w.append(record("aaaa", "conv2d_NCHWc.x86", 1e-3, 1003));
    w.append(record("bbbb", "autoschedule", 0, 1004, measure::ErrorKind::RunTimeout));
    w.append(record("bbbb", "autoschedule", 3e-3, 1005));
    w.append(record("aaaa", "conv2d_NCHWc.x86", 0.5e-3, 1006));
    // The leader re-measured: slower than its search run, yet it is the best now.
    w.append(record("aaaa", "conv2d_NCHWc.x86", 0.8e-3, 1010, measure::ErrorKind::None, true));
  }
  { std::ofstream(log.path, std::ios::app) << "not json\n{\"v\":1,\"workload_key\":\n"; }

  const TuningHistory h = read_tuning_history({log.path});
  EXPECT_EQ(h.records, 8u);
  EXPECT_EQ(h.damaged, 2u);
  ASSERT_EQ(h.damage.size(), 2u);
  EXPECT_NE(h.damage[0].find(log.path), std::string::npos);
  EXPECT_DOUBLE_EQ(h.wall_seconds, 10);
  ASSERT_EQ(h.targets.size(), 1u);
  ASSERT_EQ(h.tasks.size(), 2u);

  const TaskHistory& conv = h.tasks[0];
  EXPECT_EQ(conv.task_name, "conv2d_NCHWc.x86");
  ASSERT_EQ(conv.trials.size(), 4u);
  ASSERT_EQ(conv.confirmed.size(), 1u);
  EXPECT_EQ(conv.trials[3].number, 4);
  EXPECT_EQ(conv.trials[3].log_number, 7);
  EXPECT_DOUBLE_EQ(conv.trials[3].elapsed, 6);
  EXPECT_TRUE(std::isinf(conv.trials[1].seconds));
  EXPECT_EQ(conv.errors.at("compile-host"), 1);
  EXPECT_DOUBLE_EQ(conv.best_seconds, 0.8e-3);
  EXPECT_DOUBLE_EQ(conv.flop, 230400);
  EXPECT_NEAR(conv.gflops(conv.best_seconds), 230400 / 0.8e-3 / 1e9, 1e-12);
  EXPECT_NE(conv.description.find("conv2d_NCHWc.x86"), std::string::npos) << conv.description;

  const TaskHistory& autos = h.tasks[1];
  EXPECT_EQ(autos.description, "conv + relu");
  EXPECT_EQ(autos.flop, 0);  // not in the record: the model's kernels say
  EXPECT_EQ(autos.errors.at("run-timeout"), 1);
  EXPECT_DOUBLE_EQ(autos.best_seconds, 2e-3);

  // Each task counts at its first result until the run reaches it: 4 + 2 ms
  // from trial 1; trial 4 (conv 1 ms): 3 ms; trials 5, 6 change nothing;
  // trial 7 (conv 0.5 ms): 2.5 ms.
  const auto estimate = h.estimated_latency(conv.target);
  ASSERT_EQ(estimate.size(), 7u);
  EXPECT_EQ(estimate.front().first, 1);
  EXPECT_NEAR(estimate.front().second, 6e-3, 1e-12);
  EXPECT_NEAR(estimate[2].second, 6e-3, 1e-12);
  EXPECT_NEAR(estimate[3].second, 3e-3, 1e-12);
  EXPECT_EQ(estimate.back().first, 7);
  EXPECT_NEAR(estimate.back().second, 2.5e-3, 1e-12);
  EXPECT_TRUE(h.estimated_latency("cuda sm_90").empty());
}

TEST(TuningHistory, ALogThatCannotBeOpenedIsNamed) {
  try {
    read_tuning_history({"/nonexistent/tuning.log"});
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tuning.log"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::report
