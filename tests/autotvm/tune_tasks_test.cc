// Tuning a network's tasks in turn into one log: finished tasks are skipped,
// a run killed at any moment resumes without losing or repeating a config,
// Ctrl-C (the stop flag) drops only the batch in flight, and a time budget is
// split by weight x FLOPs.
#include "autotvm/tune_tasks.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "autotvm/synthetic_task.h"
#include "records/log_file.h"

namespace tessera::autotvm {
namespace {

// Three tasks over one synthetic space, filed under their own keys.
struct ThreeTasks {
  test::SyntheticTask synthetic{{8, 8, 4}, {5, 2, 3}};
  std::vector<Task> tasks;
  ThreeTasks() {
    for (const char* key : {"task-a", "task-b", "task-c"}) {
      tasks.push_back(synthetic.task());
      tasks.back().record_key = key;
    }
  }
  std::vector<WeightedTask> weighted() const { return {{&tasks[0], 1}, {&tasks[1], 2}, {&tasks[2], 1}}; }
};

// A runner that pauses before each batch (so a test can kill or stop the
// run mid-way) and can raise a stop flag once it has run `stop_after` batches.
class PacedRunner : public measure::Runner {
 public:
  PacedRunner(const test::SyntheticTask& t, int pause_ms) : fake_(t), pause_ms_(pause_ms) {}
  std::vector<measure::MeasureResult> run(const std::vector<measure::MeasureInput>& inputs,
                                          const std::vector<measure::BuildResult>& builds) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms_));
    if (stop && ++batches >= stop_after) stop->store(true);
    return fake_.run(inputs, builds);
  }
  std::atomic<bool>* stop = nullptr;
  int stop_after = 0, batches = 0;

 private:
  test::FakeRunner fake_;
  int pause_ms_;
};

std::string temp_log(const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / (name + "_" + std::to_string(getpid()) + ".log");
  std::filesystem::remove(path);
  return path.string();
}

TuneTasksOptions options_for(const std::string& log) {
  TuneTasksOptions o;
  o.tuner = "random";
  o.n_trial = 48;
  o.log = log;
  o.confirm_leaders = 2;
  o.confirm_rounds = 1;
  return o;
}

std::vector<records::Record> read_log(const std::string& log) {
  std::ostringstream warnings;
  return records::load_records(log, warnings);
}

size_t count_lines(const std::string& path) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

// Every search record's (task, config) once, and each task's leaders confirmed.
void expect_each_config_once_and_every_task_finished(const std::vector<records::Record>& log) {
  std::map<std::pair<std::string, int64_t>, int> seen;
  std::set<std::string> confirmed;
  for (const auto& r : log) {
    if (r.confirmed)
      confirmed.insert(r.workload_key);
    else
      ++seen[{r.workload_key, r.config_index.value()}];
  }
  for (const auto& [config, count] : seen) EXPECT_EQ(count, 1) << config.first << " config " << config.second;
  EXPECT_EQ(confirmed, (std::set<std::string>{"task-a", "task-b", "task-c"}));
  for (const char* key : {"task-a", "task-b", "task-c"})
    EXPECT_EQ(std::count_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first.first == key; }), 48) << key;
}

TEST(AutotvmTuneTasks, TunesEveryTaskThenSkipsThemWhenRunAgain) {
  ThreeTasks t;
  const std::string log = temp_log("tessera_tune_tasks");
  test::FakeBuilder builder;
  test::FakeRunner runner(t.synthetic);
  std::ostringstream out, warnings;
  const TuneTasksSummary first = tune_tasks(t.weighted(), options_for(log), {&builder, &runner}, out, warnings);
  EXPECT_EQ(first.tuned, 3);
  EXPECT_EQ(first.trials, 3 * 48);
  EXPECT_NE(out.str().find("[Task  1/ 3]  Current/Best:"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("[Task  3/ 3]"), std::string::npos);
  expect_each_config_once_and_every_task_finished(read_log(log));

  const size_t lines = count_lines(log);
  std::ostringstream again;
  const TuneTasksSummary second = tune_tasks(t.weighted(), options_for(log), {&builder, &runner}, again, warnings);
  EXPECT_EQ(second.tuned, 0);
  EXPECT_EQ(second.already_done, 3);
  EXPECT_EQ(count_lines(log), lines);
  EXPECT_NE(again.str().find("[Task  2/ 3] already tuned"), std::string::npos) << again.str();
  std::filesystem::remove(log);
}

TEST(AutotvmTuneTasks, KilledRunResumesWithEveryRecordAndNoConfigTwice) {
  ThreeTasks t;
  const std::string log = temp_log("tessera_tune_tasks_kill");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    test::FakeBuilder builder;
    PacedRunner runner(t.synthetic, 15);
    std::ostringstream out, warnings;
    tune_tasks(t.weighted(), options_for(log), {&builder, &runner}, out, warnings);
    _exit(0);
  }
  // Killed inside the second task: past the first task's 48 records and its leaders.
  for (int i = 0; i < 1000 && count_lines(log) < 70; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child finished before it could be killed";
  const std::vector<records::Record> before = read_log(log);
  ASSERT_GE(before.size(), 70u);

  test::FakeBuilder builder;
  test::FakeRunner runner(t.synthetic);
  std::ostringstream out, warnings;
  const TuneTasksSummary resumed = tune_tasks(t.weighted(), options_for(log), {&builder, &runner}, out, warnings);
  EXPECT_EQ(resumed.already_done, 1);
  EXPECT_NE(out.str().find("[Task  2/ 3] resuming:"), std::string::npos) << out.str();
  const std::vector<records::Record> after = read_log(log);
  ASSERT_GE(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i].to_json_line(), before[i].to_json_line());
  expect_each_config_once_and_every_task_finished(after);
  std::filesystem::remove(log);
}

TEST(AutotvmTuneTasks, StopFlagDropsTheBatchInFlightAndConfirmsNothing) {
  ThreeTasks t;
  const std::string log = temp_log("tessera_tune_tasks_stop");
  std::atomic<bool> stop{false};
  test::FakeBuilder builder;
  PacedRunner runner(t.synthetic, 0);
  runner.stop = &stop;
  runner.stop_after = 2;  // raised while the second batch runs, as a Ctrl-C would be
  TuneTasksOptions o = options_for(log);
  o.stop = &stop;
  std::ostringstream out, warnings;
  const TuneTasksSummary s = tune_tasks(t.weighted(), o, {&builder, &runner}, out, warnings);
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.tuned, 1);
  const std::vector<records::Record> log_records = read_log(log);
  EXPECT_EQ(s.trials, static_cast<int64_t>(log_records.size()));
  EXPECT_GT(log_records.size(), 0u);
  EXPECT_LT(log_records.size(), 48u);
  for (const auto& r : log_records) {
    EXPECT_FALSE(r.confirmed);
    EXPECT_EQ(r.workload_key, "task-a");
  }
  std::filesystem::remove(log);
}

TEST(AutotvmTuneTasks, AStopDuringTheConfirmationStopsTheRunAndConfirmsNothing) {
  ThreeTasks t;
  const std::string log = temp_log("tessera_tune_tasks_stop_confirm");
  std::atomic<bool> stop{false};
  test::FakeBuilder builder;
  PacedRunner search(t.synthetic, 0);
  PacedRunner confirm(t.synthetic, 0);
  confirm.stop = &stop;
  confirm.stop_after = 1;  // Ctrl-C while the first task's leaders are re-measured
  TuneTasksOptions o = options_for(log);
  o.stop = &stop;
  std::ostringstream out, warnings;
  const TuneTasksSummary s = tune_tasks(t.weighted(), o, {&builder, &search, &confirm}, out, warnings);
  EXPECT_TRUE(s.stopped);  // the CLI exits 130, not 0
  const std::vector<records::Record> stopped = read_log(log);
  EXPECT_EQ(stopped.size(), 48u);
  for (const auto& r : stopped) EXPECT_FALSE(r.confirmed) << "an interrupted confirmation was logged";

  // The next run confirms the first task's leaders before going on.
  test::FakeRunner runner(t.synthetic);
  std::ostringstream again;
  tune_tasks(t.weighted(), options_for(log), {&builder, &runner}, again, warnings);
  EXPECT_EQ(again.str().find("[Task  1/ 3] already tuned"), std::string::npos) << again.str();
  expect_each_config_once_and_every_task_finished(read_log(log));
  std::filesystem::remove(log);
}

TEST(AutotvmTuneTasks, ARunKilledBeforeItsConfirmationConfirmsWhenResumed) {
  ThreeTasks t;
  const std::string log = temp_log("tessera_tune_tasks_unconfirmed");
  test::FakeBuilder builder;
  test::FakeRunner runner(t.synthetic);
  std::ostringstream out, warnings;
  tune_tasks(t.weighted(), options_for(log), {&builder, &runner}, out, warnings);
  // The log as a kill between the last batch and the confirmation leaves it.
  std::vector<records::Record> unconfirmed;
  for (auto& r : read_log(log))
    if (!r.confirmed) unconfirmed.push_back(r);
  records::write_records(log, unconfirmed);

  std::ostringstream again;
  const TuneTasksSummary s = tune_tasks(t.weighted(), options_for(log), {&builder, &runner}, again, warnings);
  EXPECT_EQ(s.already_done, 0) << again.str();
  EXPECT_EQ(s.trials, 0);  // every config was measured: only the leaders are
  expect_each_config_once_and_every_task_finished(read_log(log));
  std::filesystem::remove(log);
}

TEST(AutotvmTuneTasks, TimeBudgetIsSplitByWeightTimesFlops) {
  ThreeTasks t;
  const std::vector<double> seconds = split_time_budget(t.weighted(), 60);
  ASSERT_EQ(seconds.size(), 3u);
  EXPECT_DOUBLE_EQ(seconds[0], 15);  // same FLOPs: weights 1, 2, 1
  EXPECT_DOUBLE_EQ(seconds[1], 30);
  EXPECT_DOUBLE_EQ(seconds[2], 15);
}

TEST(AutotvmTuneTasks, RefusesToTuneWithoutALog) {
  ThreeTasks t;
  test::FakeBuilder builder;
  test::FakeRunner runner(t.synthetic);
  std::ostringstream out, warnings;
  TuneTasksOptions o = options_for("");
  EXPECT_THROW(tune_tasks(t.weighted(), o, {&builder, &runner}, out, warnings), Error);
}

}  // namespace
}  // namespace tessera::autotvm
