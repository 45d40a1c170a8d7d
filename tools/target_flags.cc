#include "target_flags.h"

#include <fmt/format.h>

#include <optional>

#include "operator_flags.h"
#include "runtime/cuda_backend.h"
#include "tessera/error.h"

namespace tessera::cli {

void add_target_flag(CLI::App* cmd, std::string& text, const std::string& help) {
  cmd->add_option("--target", text,
                  help + ", e.g. \"llvm -mcpu=znver3 -mattr=+avx2,+fma\", \"cuda\" (the GPU here, else sm_80), " +
                      "\"opencl\" (default: this host)");
}

namespace {

// A cuda target takes what its text does not state from the GPU this
// machine has (its arch, its block limits), else sm_80's defaults.
target::Target with_device_defaults(target::Target t, const std::string& text) {
  if (t.kind != "cuda") return t;
  const std::optional<runtime::CudaDeviceInfo> device = runtime::cuda_device_info();
  if (!device) return t;
  if (text.find("-arch=") == std::string::npos && device->arch >= 75) t.gpu.arch = device->arch;
  if (text.find("-max_threads_per_block=") == std::string::npos)
    t.gpu.max_threads_per_block = device->max_threads_per_block;
  if (text.find("-max_shared_memory_per_block=") == std::string::npos)
    t.gpu.max_shared_memory_per_block = device->max_shared_memory_per_block;
  return t;
}

}  // namespace

target::Target parse_target_flag(const std::string& text) {
  if (text.empty()) return target::Target::host();
  try {
    return with_device_defaults(target::Target::parse(text), text);
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
