#pragma once
// A fleet on loopback for the rpc tests: a key file in a fresh directory, a
// tracker and servers as real processes of `tessera-rpc` (the runtime-only
// binary: so a test can kill -9 one, and the device side is proven to need
// no compiler), each logging to its own file.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rpc/security.h"
#include "rpc/tracker_client.h"

namespace tessera::rpc::testing {

// A port nobody listens on now (the kernel's pick for port 0).
inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Polls `done` every 50 ms for up to `seconds`.
inline bool wait_until(const std::function<bool()>& done, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// `BINARY ARGS...` (TESSERA_CLI by default) with stdout and stderr into
// `log`; killed with SIGKILL when destroyed.
class CliProcess {
 public:
  CliProcess(std::vector<std::string> args, std::string log, const char* binary = TESSERA_CLI) : log_(std::move(log)) {
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> argv{const_cast<char*>(binary)};
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(binary, argv.data());
      ::_exit(127);
    }
  }
  ~CliProcess() { kill(SIGKILL); }
  CliProcess(const CliProcess&) = delete;
  CliProcess& operator=(const CliProcess&) = delete;
  // Sends `signal` and reaps; returns the wait status (-1 when already gone).
  int kill(int signal) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, signal);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  // Freezes the process (SIGSTOP) without reaping it: a device that hangs.
  void freeze() {
    if (pid_ > 0) ::kill(pid_, SIGSTOP);
  }
  bool alive() {
    if (pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) != 0) pid_ = -1;  // exited: reaped
    return pid_ > 0;
  }
  std::string log() const { return read_text(log_); }

 private:
  pid_t pid_ = -1;
  std::string log_;
};

class Fleet {
 public:
  explicit Fleet(const std::string& name) : dir_(std::filesystem::temp_directory_path() / ("tessera-rpc-test-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    key_file_ = (dir_ / "fleet.key").string();
    write_key_file(key_file_, generate_key_pair());
    port_ = free_port();
  }
  ~Fleet() {
    servers_.clear();
    tracker_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string dir() const { return dir_.string(); }
  const std::string& key_file() const { return key_file_; }
  KeyPair keys() const { return read_key_file(key_file_); }
  std::string tracker_address() const { return "127.0.0.1:" + std::to_string(port_); }
  CliProcess& tracker() { return *tracker_; }
  CliProcess& server(size_t i) { return *servers_.at(i); }

  void start_tracker(std::vector<std::string> more = {}) {
    std::vector<std::string> args{"tracker", "--port", std::to_string(port_), "--key-file", key_file_,
                                  "--heartbeat-timeout", "1"};
    args.insert(args.end(), more.begin(), more.end());
    tracker_ = std::make_unique<CliProcess>(args, (dir_ / "tracker.log").string(), TESSERA_RPC);
  }
  // A server of `key` with `slots` slots; more flags after; the fleet's key
  // file unless `key_file` names another.
  void start_server(const std::string& key, int slots = 1, std::vector<std::string> more = {},
                    const std::string& key_file = "") {
    std::vector<std::string> args{"server", "--tracker", tracker_address(), "--key", key, "--slots",
                                  std::to_string(slots), "--key-file", key_file.empty() ? key_file_ : key_file,
                                  "--heartbeat-interval", "0.2",
                                  "--session-timeout", "3"};
    args.insert(args.end(), more.begin(), more.end());
    servers_.push_back(std::make_unique<CliProcess>(
        args, (dir_ / ("server" + std::to_string(servers_.size()) + ".log")).string(), TESSERA_RPC));
  }
  // A tracker and `servers` one-slot servers of `key`, all registered.
  bool start(const std::string& key, int servers) {
    start_tracker();
    for (int i = 0; i < servers; ++i) start_server(key);
    return wait_for_devices(key, servers, servers);
  }
  // The tracker's queue status, or empty while it does not answer.
  std::vector<KeyStatus> status(double timeout = 1) const {
    try {
      return query_tracker(tracker_address(), keys(), timeout);
    } catch (const std::exception&) {
      return {};
    }
  }
  // Waits until the tracker counts `total` devices of `key`, `free` of them free.
  bool wait_for_devices(const std::string& key, int64_t total, int64_t free, double seconds = 10) const {
    return wait_until(
        [&] {
          for (const auto& k : status())
            if (k.key == key) return k.total == total && k.free == free;
          return total == 0;
        },
        seconds);
  }

 private:
  std::filesystem::path dir_;
  std::string key_file_;
  int port_ = 0;
  std::unique_ptr<CliProcess> tracker_;
  std::vector<std::unique_ptr<CliProcess>> servers_;
};

}  // namespace tessera::rpc::testing
