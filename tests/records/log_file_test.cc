#include "records/log_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <sstream>

#include "records/records_test_util.h"
#include "tessera/error.h"

namespace tessera::records {
namespace {

using testing::make_record;
using testing::read_text;
using testing::ScratchDir;
using testing::write_text;

// A batch whose records are numbered first, first+1, ... in config_index.
std::vector<Record> numbered_batch(int64_t first, int size) {
  std::vector<Record> batch;
  for (int i = 0; i < size; ++i) {
    Record r = make_record("key", "llvm", {1e-3 * static_cast<double>(first + i + 1)});
    r.config_index = first + i;
    r.trace.split("C", "i", {first + i + 1, 2}).vectorize("C", "i.1");
    batch.push_back(std::move(r));
  }
  return batch;
}

std::vector<int64_t> indexes(const std::vector<Record>& records) {
  std::vector<int64_t> out;
  for (const Record& r : records) out.push_back(r.config_index.value_or(-1));
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Kills and reaps a forked child however the test ends.
struct ChildGuard {
  pid_t pid;
  ~ChildGuard() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  void kill_and_reap() {
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    pid = -1;
  }
};

TEST(RecordsLog, AppendingTwiceKeepsBothBatchesInOrder) {
  ScratchDir dir;
  const std::string path = dir.file("tune.log");
  RecordWriter(path).append(numbered_batch(0, 3));
  RecordWriter(path).append(numbered_batch(3, 2));  // a second writer appends, never truncates
  std::ostringstream warnings;
  std::vector<Record> records = load_records(path, warnings);
  EXPECT_EQ(indexes(records), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(warnings.str(), "");
  EXPECT_EQ(lines_of(read_text(path)).size(), 5u);
}

TEST(RecordsLog, SkipsDamagedLinesWithFileAndLineWarning) {
  ScratchDir dir;
  const std::string path = dir.file("tune.log");
  std::vector<Record> good = numbered_batch(0, 3);
  std::string g0 = good[0].to_json_line(), g1 = good[1].to_json_line(), g2 = good[2].to_json_line();
  auto with = [](std::string line, const std::string& from, const std::string& to) {
    return line.replace(line.find(from), from.size(), to);
  };
  write_text(path, g0 + "\n" +                                         // 1 good
                       "\n" +                                          // 2 blank
                       "this is not json\n" +                          // 3 garbage
                       with(g1, "\"v\":1", "\"v\":99") + "\n" +        // 4 wrong version
                       with(g1, "\"result\":", "\"outcome\":") + "\n"  // 5 missing result
                       + std::string("\x7f\x45\x4c\x46\x00\x01\xff\x80", 8) + "\n" +  // 6 binary junk
                       "{\"v\":1,\"workload_key\":42}\n" +             // 7 valid JSON, wrong shape
                       g1 + "\n" +                                     // 8 good
                       g2.substr(0, g2.size() - 20));                  // 9 truncated last line
  std::ostringstream warnings;
  std::vector<Record> records = load_records(path, warnings);
  EXPECT_EQ(indexes(records), (std::vector<int64_t>{0, 1}));

  std::vector<std::string> w = lines_of(warnings.str());
  ASSERT_EQ(w.size(), 7u) << warnings.str();
  const std::vector<std::pair<int, std::string>> expected = {
      {2, "blank line"},
      {3, "not valid JSON"},
      {4, "unknown format version 99"},
      {5, "missing field 'result'"},
      {6, "not valid JSON"},
      {7, "field 'workload_key' must be a string"},
      {9, "truncated"},
  };
  for (size_t i = 0; i < expected.size(); ++i) {
    const std::string prefix =
        "warning: " + path + ":" + std::to_string(expected[i].first) + ": skipped damaged record (";
    EXPECT_EQ(w[i].rfind(prefix, 0), 0u) << w[i];
    EXPECT_NE(w[i].find(expected[i].second), std::string::npos) << w[i];
    EXPECT_EQ(w[i].back(), ')') << w[i];
  }
}

TEST(RecordsLog, MissingFileIsAnErrorNamingThePath) {
  ScratchDir dir;
  const std::string path = dir.file("no-such.log");
  std::ostringstream warnings;
  try {
    load_records(path, warnings);
    FAIL() << "loaded a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(RecordsLog, WriterStartsAFreshLineAfterATruncatedOne) {
  ScratchDir dir;
  const std::string path = dir.file("tune.log");
  std::string first = numbered_batch(0, 1)[0].to_json_line();
  write_text(path, first + "\n" + first.substr(0, 30));  // an earlier writer died mid-line
  RecordWriter(path).append(numbered_batch(1, 2));
  std::ostringstream warnings;
  EXPECT_EQ(indexes(load_records(path, warnings)), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(lines_of(warnings.str()).size(), 1u) << warnings.str();
  EXPECT_NE(warnings.str().find(":2: skipped damaged record"), std::string::npos) << warnings.str();
}

// A tuner killed with SIGKILL at an arbitrary moment keeps every batch it
// finished; a restarted writer appends after them.
TEST(RecordsLog, ChildKilledMidTuningLeavesEveryCompletedBatchReadable) {
  ScratchDir dir;
  const std::string path = dir.file("tune.log");
  constexpr int kBatch = 40, kReportedBatches = 12;
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ChildGuard child{::fork()};
  ASSERT_GE(child.pid, 0);
  if (child.pid == 0) {
    ::close(pipe_fds[0]);
    try {
      RecordWriter writer(path);
      for (int64_t b = 0;; ++b) {  // runs until killed
        writer.append(numbered_batch(b * kBatch, kBatch));
        char done = 1;
        if (::write(pipe_fds[1], &done, 1) != 1) ::_exit(2);
      }
    } catch (...) {
      ::_exit(3);
    }
  }
  ::close(pipe_fds[1]);
  int completed = 0;
  char byte;
  while (completed < kReportedBatches && ::read(pipe_fds[0], &byte, 1) == 1) ++completed;
  child.kill_and_reap();
  ::close(pipe_fds[0]);
  ASSERT_EQ(completed, kReportedBatches);

  std::ostringstream warnings;
  std::vector<Record> records = load_records(path, warnings);
  // Every completed batch is there, in order; the child may have finished more.
  ASSERT_GE(records.size(), static_cast<size_t>(kReportedBatches * kBatch));
  for (size_t i = 0; i < records.size(); ++i) ASSERT_EQ(records[i].config_index, static_cast<int64_t>(i));
  // At most the line in flight is damaged, and only as the file's last line.
  std::vector<std::string> w = lines_of(warnings.str());
  ASSERT_LE(w.size(), 1u) << warnings.str();
  if (!w.empty()) {
    EXPECT_NE(w[0].find(":" + std::to_string(records.size() + 1) + ": skipped damaged record"), std::string::npos)
        << w[0];
  }

  // Restart: new records follow the old ones and load cleanly.
  const int64_t next = static_cast<int64_t>(records.size());
  RecordWriter(path).append(numbered_batch(next, kBatch));
  std::ostringstream warnings_after;
  std::vector<Record> resumed = load_records(path, warnings_after);
  ASSERT_EQ(resumed.size(), records.size() + kBatch);
  for (size_t i = 0; i < resumed.size(); ++i) ASSERT_EQ(resumed[i].config_index, static_cast<int64_t>(i));
  EXPECT_EQ(lines_of(warnings_after.str()).size(), w.size()) << warnings_after.str();
}

// One writer at a time: a second is refused with a message saying why, in
// this process or another, and the log is free again once the first is gone.
TEST(RecordsLog, ASecondWriterIsRefusedWhileTheFirstHoldsTheLog) {
  ScratchDir dir;
  const std::string path = dir.file("tune.log");
  std::optional<RecordWriter> first(std::in_place, path);
  first->append(numbered_batch(0, 2));
  try {
    RecordWriter second(path);
    FAIL() << "a second writer was let in";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is being written by another tuner"), std::string::npos) << e.what();
  }
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    try {
      RecordWriter other(path);
    } catch (const Error&) {
      ::_exit(7);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7) << "another process was let in";
  first.reset();
  RecordWriter(path).append(numbered_batch(2, 2));
  std::ostringstream warnings;
  EXPECT_EQ(indexes(load_records(path, warnings)), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(warnings.str(), "");
}

TEST(RecordsLog, WriteRecordsReplacesTheFile) {
  ScratchDir dir;
  const std::string path = dir.file("best.log");
  write_text(path, "old content\n");
  write_records(path, numbered_batch(7, 2));
  std::ostringstream warnings;
  EXPECT_EQ(indexes(load_records(path, warnings)), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(warnings.str(), "");
}

TEST(RecordsLog, StreamingReaderVisitsRecordsInFileOrder) {
  ScratchDir dir;
  const std::string path = dir.file("tune.log");
  RecordWriter(path).append(numbered_batch(0, 4));
  std::vector<int64_t> seen;
  std::ostringstream warnings;
  for_each_record(path, warnings, [&](Record&& r) { seen.push_back(*r.config_index); });
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace tessera::records
