#include "driver/parse_target.h"

#include <optional>

#include "runtime/cuda_backend.h"

namespace tessera::driver {

target::Target parse_target(const std::string& text) {
  if (text.empty()) return target::Target::host();
  target::Target t = target::Target::parse(text);
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

}  // namespace tessera::driver
