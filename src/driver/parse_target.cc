#include "driver/parse_target.h"

#include <optional>

#include "runtime/cuda_backend.h"
#include "tessera/error.h"

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
  if (t.tf32 && t.gpu.arch < 80)
    throw Error("target '" + text + "': -tf32 needs tensor cores that take TF32 (sm_80 or newer); this device is " +
                t.gpu.arch_name());
  return t;
}

}  // namespace tessera::driver
