// A tuning run killed with SIGKILL and restarted on the same log: every batch
// flushed before the kill is kept, and no config is measured twice.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "autotvm/callback.h"
#include "autotvm/history.h"
#include "autotvm/synthetic_task.h"
#include "records/log_file.h"

namespace tessera::autotvm {
namespace {

size_t count_lines(const std::string& path) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

// Tunes `trials` configs of `t` into `log`, skipping what the log already holds.
void tune_into(const test::SyntheticTask& t, const std::string& log, int trials, int64_t* resumed) {
  auto tuner = make_tuner("random", t.task(), 7);
  std::ostringstream warnings;
  int64_t done = 0;
  if (std::filesystem::exists(log)) done = load_history(*tuner, t.task(), records::load_records(log, warnings), false, warnings);
  if (resumed) *resumed = done;
  test::FakeBuilder builder;
  test::FakeRunner runner(t);
  test::FakeRunner confirm(t);  // the leaders\' re-measurement
  tuner->tune(TuneOptions{.n_trial = static_cast<int>(trials - done), .batch_size = 8},
              MeasureOption{&builder, &runner, &confirm}, {log_to_file(log)});
}

TEST(AutotvmResume, KilledRunRestartsWithEveryFlushedRecordExactlyOnce) {
  test::SyntheticTask t({8, 8, 8}, {5, 2, 4});
  const std::string log = (std::filesystem::temp_directory_path() /
                           ("tessera_resume_" + std::to_string(getpid()) + ".log")).string();
  std::filesystem::remove(log);

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Slow the child down so the parent can kill it mid-run: tuning all 512
    // configs with a pause between batches.
    auto tuner = make_tuner("random", t.task(), 3);
    test::FakeBuilder builder;
    test::FakeRunner runner(t);
    test::FakeRunner confirm(t);  // the leaders\' re-measurement
    Callback pause = [](const Tuner&, const std::vector<ConfigEntity>&, const std::vector<measure::MeasureResult>&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    };
    tuner->tune(TuneOptions{.n_trial = 512, .batch_size = 8}, MeasureOption{&builder, &runner, &confirm},
                {log_to_file(log), pause});
    _exit(0);
  }
  // Kill it once at least 5 batches are on disk.
  for (int i = 0; i < 500 && count_lines(log) < 40; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child finished before it could be killed";

  std::ostringstream warnings;
  const auto before = records::load_records(log, warnings);
  ASSERT_GE(before.size(), 40u);
  ASSERT_LT(before.size(), 512u);

  int64_t resumed = 0;
  tune_into(t, log, 200, &resumed);
  EXPECT_EQ(resumed, static_cast<int64_t>(before.size()));

  const auto after = records::load_records(log, warnings);
  // 200 search records, each config once, then the leaders' re-measurement
  // (5 confirmed records, of configs measured before).
  std::map<int64_t, int> seen;
  size_t confirmed = 0;
  for (const auto& r : after) {
    if (r.confirmed) {
      ++confirmed;
      EXPECT_EQ(seen.count(r.config_index.value()), 1u) << "confirmed a config never measured";
    } else {
      ++seen[r.config_index.value()];
    }
  }
  EXPECT_EQ(after.size(), 205u);
  EXPECT_EQ(confirmed, 5u);
  EXPECT_TRUE(after.back().confirmed);
  for (const auto& [index, count] : seen) EXPECT_EQ(count, 1) << "config " << index << " measured twice";
  // Every record flushed before the kill is still there, first, in order.
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i].config_index, before[i].config_index);
  std::filesystem::remove(log);
}

}  // namespace
}  // namespace tessera::autotvm
