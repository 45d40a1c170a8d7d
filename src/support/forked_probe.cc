#include "support/forked_probe.h"

#include "support/fd_io.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace tessera::support {

ProbeAnswer ask_in_forked_child(const std::function<std::string()>& ask, const std::string& what, int timeout_ms) {
  int fds[2];
  if (::pipe(fds) != 0) return {false, "cannot create a pipe to ask " + what + ": " + std::strerror(errno)};
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return {false, "cannot fork to ask " + what + ": " + std::strerror(err)};
  }
  if (pid == 0) {
    ::close(fds[0]);
    // It dies with the asker, and dumps no core when the question crashes it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    write_all(fds[1], ask());
    ::_exit(0);  // no atexit handlers: they belong to the parent
  }
  ::close(fds[1]);
  std::string text;
  bool timed_out = false;
  for (;;) {
    pollfd waiting{fds[0], POLLIN, 0};
    const int ready = ::poll(&waiting, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) timed_out = true;
    if (ready <= 0) break;
    char buffer[4096];
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string child = " (process " + std::to_string(pid) + ")";
  if (timed_out) {
    const std::string limit = timeout_ms % 1000 == 0 ? std::to_string(timeout_ms / 1000) + " s"
                                                     : std::to_string(timeout_ms) + " ms";
    return {false, "asking " + what + child + ": no answer within " + limit};
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return {false, "asking " + what + child + ": the child died (wait status " + std::to_string(status) + ")"};
  return {true, text};
}

}  // namespace tessera::support
