#include "measure/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>
#include <utility>

#include "tessera/error.h"

namespace tessera::measure {

std::string signal_name(int signal) {
  static constexpr std::array<std::pair<int, const char*>, 16> kNames{{
      {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},
      {SIGABRT, "SIGABRT"}, {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},
      {SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"},   {SIGPIPE, "SIGPIPE"}, {SIGXCPU, "SIGXCPU"},
      {SIGXFSZ, "SIGXFSZ"}, {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"}, {SIGALRM, "SIGALRM"},
  }};
  for (const auto& [number, name] : kNames)
    if (number == signal) return name;
  return "signal " + std::to_string(signal);
}

namespace {

// A crashing child should die at once by its signal: no core file, and no crash
// handler inherited from the parent (LLVM installs some) that could hang or
// turn the signal into an ordinary exit.
void prepare_child_for_crashes() {
  struct rlimit no_core {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS, SIGPIPE})
    std::signal(s, SIG_DFL);
}

ChildProcess::Exit decode_status(int status) {
  ChildProcess::Exit e;
  if (WIFSIGNALED(status)) {
    e.signaled = true;
    e.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    e.code = WEXITSTATUS(status);
  }
  return e;
}

}  // namespace

ChildProcess::ChildProcess(const std::function<void(int fd)>& body) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  start_ = Clock::now();
  const pid_t parent = ::getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(std::string("cannot fork a measurement process: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::close(fds[0]);
    // Its own process group, so that a timeout kills whatever it started
    // too; and it dies with the parent (even by SIGKILL), so that a killed
    // tuner leaves no hung kernel or runaway build behind.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(122);  // the parent died before prctl
    prepare_child_for_crashes();
    try {
      body(fds[1]);
    } catch (...) {
      _exit(121);
    }
    _exit(0);
  }
  ::close(fds[1]);
  ::setpgid(pid, pid);  // as the child does: whichever runs first, the group exists
  pid_ = pid;
  fd_ = fds[0];
  fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      fd_(std::exchange(other.fd_, -1)),
      start_(other.start_),
      output_(std::move(other.output_)),
      reaped_(std::exchange(other.reaped_, true)),
      exit_(other.exit_) {}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !reaped_) kill();
  close_fd();
}

void ChildProcess::close_fd() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool ChildProcess::read_available() {
  char buffer[65536];
  while (fd_ >= 0) {
    ssize_t n = ::read(fd_, buffer, sizeof buffer);
    if (n > 0) {
      output_.append(buffer, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return true;
    } else {
      close_fd();  // end of file, or an error that ends the conversation all the same
    }
  }
  return false;
}

bool ChildProcess::read_until(Clock::time_point deadline) {
  while (fd_ >= 0) {
    if (Clock::now() >= deadline) return false;
    read_until_more(deadline);
  }
  return true;
}

bool ChildProcess::read_until_more(Clock::time_point deadline) {
  while (fd_ >= 0) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return true;
    pollfd p{fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (ready < 0 && errno != EINTR) return read_available();
    if (ready > 0) return read_available();
  }
  return false;
}

ChildProcess::Exit ChildProcess::wait(Clock::time_point deadline) {
  while (!reaped_) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      exit_ = decode_status(status);
    } else if (r < 0 && errno != EINTR) {
      reaped_ = true;  // not our child any more (reaped elsewhere); nothing to wait for
    } else if (Clock::now() >= deadline) {
      return kill();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return exit_;
}

ChildProcess::Exit ChildProcess::kill() {
  if (!reaped_ && pid_ > 0) {
    ::kill(-pid_, SIGKILL);  // the child's group: anything it started
    ::kill(pid_, SIGKILL);
    int status = 0;
    pid_t r;
    do {
      r = ::waitpid(pid_, &status, 0);
    } while (r < 0 && errno == EINTR);
    if (r == pid_) exit_ = decode_status(status);
    reaped_ = true;
  }
  return exit_;
}

}  // namespace tessera::measure
