// The auto-scheduler's one-task search keeps its state in the log: killed
// with SIGKILL mid-run, a rerun finds every flushed record, measures no
// schedule twice, and ends with the requested number of distinct schedules.
// Measurement is faked (a cost derived from the schedule's text) so that the
// test is about the log, not about timing.
#include "autoschedule/search_task.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "ops/workloads.h"
#include "records/log_file.h"
#include "testing/fake_builder.h"
#include "tir/hand_written_schedule.h"

namespace tessera::autoschedule {
namespace {

using testing::FakeBuilder;

class FakeRunner : public measure::Runner {
 public:
  explicit FakeRunner(int pause_ms = 0) : pause_ms_(pause_ms) {}
  std::vector<measure::MeasureResult> run(const std::vector<measure::MeasureInput>& inputs,
                                          const std::vector<measure::BuildResult>&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms_));
    std::vector<measure::MeasureResult> out;
    for (const auto& in : inputs) {
      measure::MeasureResult r;
      const double cost = 1e-4 * (1.0 + static_cast<double>(std::hash<std::string>()(in.trace.dump()) % 1000) / 100);
      r.costs = {cost, cost, cost};
      r.timestamp = 1;
      out.push_back(r);
    }
    return out;
  }

 private:
  int pause_ms_;
};

SearchTask dense_task() {
  const ops::Workload w = ops::dense_workload({8, 64}, {32, 64});
  return SearchTask{"dense", w.dag, target::Target::host(), nlohmann::json{{"op", "dense"}}};
}

size_t count_lines(const std::string& path) {
  std::ostringstream warnings;
  return std::filesystem::exists(path) ? records::load_records(path, warnings).size() : 0;
}

TEST(AutoscheduleSearch, KilledRunResumesWithoutLosingOrRepeatingASchedule) {
  const std::string log = (std::filesystem::temp_directory_path() /
                           ("tessera_autoschedule_resume_" + std::to_string(getpid()) + ".log")).string();
  std::filesystem::remove(log);
  const SearchTask task = dense_task();

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    FakeBuilder builder;
    FakeRunner runner(30);  // slow enough to be killed mid-run
    RandomCostModel model(1);
    std::ostringstream out, warnings;
    search_task(task, model, SearchOptions{.n_trial = 400, .batch_size = 8, .log = log, .seed = 1}, builder, runner,
                out, warnings);
    _exit(0);
  }
  for (int i = 0; i < 1000 && count_lines(log) < 24; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child finished before it could be killed";
  const size_t before = count_lines(log);
  ASSERT_GE(before, 24u);
  ASSERT_LT(before, 400u);

  FakeBuilder builder;
  FakeRunner runner;
  XgbStoreCostModel model;
  std::ostringstream out, warnings;
  const SearchResult r =
      search_task(task, model, SearchOptions{.n_trial = static_cast<int>(before) + 40, .batch_size = 8, .log = log,
                                             .seed = 2},
                  builder, runner, out, warnings);
  EXPECT_EQ(r.resumed, static_cast<int64_t>(before));
  EXPECT_EQ(r.trials, 40);
  EXPECT_TRUE(std::isfinite(r.best_cost));
  EXPECT_NE(out.str().find("[autoschedule dense]  Current/Best:"), std::string::npos) << out.str();

  // The search's trials, then the 5 leaders re-measured ("confirmed").
  std::ostringstream w2;
  const auto records = records::load_records(log, w2);
  EXPECT_EQ(records.size(), before + 40 + 5);
  std::set<std::string> traces;
  size_t confirmed = 0;
  for (const auto& rec : records) {
    EXPECT_EQ(rec.task_name, kAutoScheduleTaskName);
    EXPECT_FALSE(rec.config_index.has_value());
    if (rec.confirmed) {
      ++confirmed;
      continue;
    }
    traces.insert(rec.trace.dump());
  }
  EXPECT_EQ(confirmed, 5u);
  EXPECT_EQ(traces.size(), before + 40) << "a schedule was measured twice";
  std::filesystem::remove(log);
}

// Faster than anything the search finds: the hand-written schedule.
class HandWrittenIsFastestRunner : public FakeRunner {
 public:
  explicit HandWrittenIsFastestRunner(std::string hand_written) : hand_written_(std::move(hand_written)) {}
  std::vector<measure::MeasureResult> run(const std::vector<measure::MeasureInput>& inputs,
                                          const std::vector<measure::BuildResult>& builds) override {
    std::vector<measure::MeasureResult> out = FakeRunner::run(inputs, builds);
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].trace.dump() == hand_written_) {
        out[i].costs = {1e-6, 1e-6, 1e-6};
        ++measured_hand_written;
      }
    return out;
  }
  int measured_hand_written = 0;

 private:
  std::string hand_written_;
};

// A few trials of a large space can all be slower than the untuned build:
// the search measures the hand-written schedule in its first round (once,
// also across a resumed run), so the task's best is never slower than it.
TEST(AutoscheduleSearch, TheHandWrittenScheduleIsMeasuredOnceAndBoundsTheBest) {
  const std::string log = (std::filesystem::temp_directory_path() /
                           ("tessera_autoschedule_hand_written_" + std::to_string(getpid()) + ".log")).string();
  std::filesystem::remove(log);
  const SearchTask task = dense_task();
  const schedule::Trace hand_written = tir::hand_written_schedule(task.dag, task.target);
  FakeBuilder builder;
  HandWrittenIsFastestRunner runner(hand_written.dump());
  for (int run = 0; run < 2; ++run) {
    RandomCostModel model(1);
    std::ostringstream out, warnings;
    const SearchResult r = search_task(
        task, model, SearchOptions{.n_trial = 8 * (run + 1), .batch_size = 8, .log = log, .seed = 3, .confirm_leaders = 0},
        builder, runner, out, warnings);
    EXPECT_EQ(r.trials, 8) << "run " << run;
    EXPECT_EQ(r.best_cost, 1e-6) << "run " << run;
    EXPECT_EQ(r.best_trace.dump(), hand_written.dump()) << "run " << run;
  }
  EXPECT_EQ(runner.measured_hand_written, 1) << "measured again after resuming";
  std::filesystem::remove(log);
}

}  // namespace
}  // namespace tessera::autoschedule
