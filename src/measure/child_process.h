#pragma once
// A forked child process that reports back through a pipe. The measure layer
// runs every build and every kernel this way, so that a crash, an abort or a
// hang costs one candidate and never the process that asked for it.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>

namespace tessera::measure {

// "SIGSEGV" for SIGSEGV, "signal 77" for numbers without a name.
std::string signal_name(int signal);


class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;

  // Forks. The child leads a process group of its own and is killed when
  // the thread that forked it dies. It runs body(fd), fd being the write end of the pipe, then
  // _exit(0) without running the parent's atexit handlers or flushing its
  // stdio buffers. An exception escaping body ends the child with _exit(121).
  // Throws tessera::Error when the pipe or the fork cannot be made.
  explicit ChildProcess(const std::function<void(int fd)>& body);
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ~ChildProcess();  // kills and reaps a child still running, closes the pipe

  pid_t pid() const { return pid_; }
  int fd() const { return fd_; }  // read end of the pipe; -1 once it reached end of file
  Clock::time_point start_time() const { return start_; }
  const std::string& output() const { return output_; }

  // Reads what the pipe holds without blocking. Returns false once the pipe
  // reached end of file (the child exited or closed it); the fd is then closed.
  bool read_available();
  // Waits for output until end of file or the deadline; true at end of file.
  bool read_until(Clock::time_point deadline);
  // Waits until more output arrives, end of file, or the deadline, and reads
  // what arrived; false once the pipe reached end of file.
  bool read_until_more(Clock::time_point deadline);

  struct Exit {
    bool signaled = false;
    int code = 0;    // exit status when !signaled
    int signal = 0;  // terminating signal when signaled
  };
  // Reaps the child, killing it with SIGKILL if it is still running at the deadline.
  Exit wait(Clock::time_point deadline);
  // SIGKILLs the child's process group and reaps the child.
  Exit kill();

 private:
  void close_fd();
  pid_t pid_ = -1;
  int fd_ = -1;
  Clock::time_point start_;
  std::string output_;
  bool reaped_ = false;
  Exit exit_;
};

}  // namespace tessera::measure
