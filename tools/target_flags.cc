#include "target_flags.h"

#include <fmt/format.h>

#include "operator_flags.h"
#include "driver/parse_target.h"
#include "tessera/error.h"

namespace tessera::cli {

void add_target_flag(CLI::App* cmd, std::string& text, const std::string& help) {
  cmd->add_option("--target", text,
                  help + ", e.g. \"llvm -mcpu=znver3 -mattr=+avx2,+fma\", \"cuda\" (the GPU here, else sm_80), " +
                      "\"opencl\" (default: this host)");
}

target::Target parse_target_flag(const std::string& text) {
  try {
    return driver::parse_target(text);
  } catch (const Error& e) {
    throw Error(std::string("--target: ") + e.what());
  }
}

target::Target resolve_target(const std::string& text, int threads) {
  target::Target target = parse_target_flag(text);
  if (threads != 0 && target.threads != 0 && threads != target.threads)
    throw Error(fmt::format("--threads {} and --target '{}' disagree on the thread count", threads, text));
  target.threads = resolve_threads(threads != 0 ? threads : target.threads);
  return target;
}

}  // namespace tessera::cli
