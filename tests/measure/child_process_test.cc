// Measurement children never outlive their purpose: a timeout kills what the
// child started too, and a tuner killed by SIGKILL leaves no child behind.
#include "measure/child_process.h"
#include "support/fd_io.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>

namespace tessera::measure {
namespace {

using namespace std::chrono_literals;

// Orphans of this test's descendants become its children (rather than
// init's), so the test can reap them and see how they ended.
struct Subreaper {
  Subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }
  ~Subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 0); }
};

// Waits up to `limit` for `pid` (a child of this process) to end; true with
// its status when it did. A process still running is killed afterwards.
bool ended_within(pid_t pid, std::chrono::milliseconds limit, int& status) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(5ms);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return false;
}

pid_t read_pid(int fd) {
  std::string text;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') text += c;
  return text.empty() ? -1 : static_cast<pid_t>(std::stol(text));
}

void write_pid(int fd, pid_t pid) {
  const std::string text = std::to_string(pid) + "\n";
  support::write_all(fd, text);
}

TEST(ChildProcess, TimeoutKillsWhatTheChildStarted) {
  Subreaper subreaper;
  ChildProcess child([](int fd) {
    const pid_t grandchild = ::fork();
    if (grandchild == 0) {
      ::pause();  // a runaway process the child started
      ::_exit(0);
    }
    write_pid(fd, grandchild);
    ::pause();
  });
  const auto deadline = ChildProcess::Clock::now() + 10s;
  while (child.output().find('\n') == std::string::npos && ChildProcess::Clock::now() < deadline) {
    child.read_available();
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_NE(child.output().find('\n'), std::string::npos) << "the child did not say its grandchild's pid";
  const pid_t grandchild = static_cast<pid_t>(std::stol(child.output()));
  child.wait(ChildProcess::Clock::now() + 50ms);  // the "timeout": kills the group
  int status = 0;
  ASSERT_TRUE(ended_within(grandchild, 5s, status)) << "the grandchild outlived the timeout";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

TEST(ChildProcess, ATunerKilledBySigkillLeavesNoChildBehind) {
  Subreaper subreaper;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t tuner = ::fork();
  ASSERT_GE(tuner, 0);
  if (tuner == 0) {  // stands for the tuner: a measurement child that hangs
    ::close(fds[0]);
    ChildProcess hung([](int) { ::pause(); });
    write_pid(fds[1], hung.pid());
    ::pause();
    ::_exit(0);
  }
  ::close(fds[1]);
  const pid_t hung = read_pid(fds[0]);
  ::close(fds[0]);
  ASSERT_GT(hung, 0);
  ::kill(tuner, SIGKILL);
  int status = 0;
  ASSERT_TRUE(ended_within(tuner, 5s, status));
  ASSERT_TRUE(ended_within(hung, 5s, status)) << "the hung child outlived the tuner";
  // Killed by its parent-death signal, or (when the tuner died before the
  // child had asked for that signal, as under load) by its own check: exit 122.
  EXPECT_TRUE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) || (WIFEXITED(status) && WEXITSTATUS(status) == 122))
      << "status " << status;
}

}  // namespace
}  // namespace tessera::measure
