#pragma once
// The CUDA driver as a GpuBackend: libcuda.so.1 found with dlopen at first
// use (a binary starts, and says why, on a machine without a GPU), device 0
// with its primary context, one stream, the artifact's cubin loaded when its
// arch is the device's (else its PTX, compiled by the driver for a newer
// one), timing by events on the stream.
#include <memory>
#include <optional>
#include <string>

#include "runtime/gpu_backend.h"

namespace tessera::runtime {

// Why no CUDA device can be used here, or "" when one can. Asked, with
// cuda_device_info, in a forked child that exits, unless this process already
// runs on the GPU: CUDA does not survive fork, and a tuner that read its target
// from the device must still fork measurement children that use it.
std::string cuda_unavailable_reason();

// Device 0's name and limits, for a cuda target's defaults; nothing without one.
struct CudaDeviceInfo {
  std::string name;
  int arch = 0;  // compute capability x 10
  int max_threads_per_block = 0;
  int max_shared_memory_per_block = 0;  // bytes, without opting in
  int multiprocessors = 0;
};
std::optional<CudaDeviceInfo> cuda_device_info();

// Throws tessera::Error with cuda_unavailable_reason() when there is no device.
std::unique_ptr<GpuBackend> make_cuda_backend();

}  // namespace tessera::runtime
