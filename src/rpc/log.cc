#include "rpc/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace tessera::rpc {

void log_line(const std::string& who, const std::string& text) {
  static std::mutex mutex;
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[16];
  std::strftime(stamp, sizeof stamp, "%H:%M:%S", &local);
  std::lock_guard<std::mutex> lock(mutex);
  std::fprintf(stderr, "%s %s: %s\n", stamp, who.c_str(), text.c_str());
  std::fflush(stderr);
}

}  // namespace tessera::rpc
