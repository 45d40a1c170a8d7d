#pragma once
// What the GPU graph executor needs of a device: buffers, a module of
// kernels loaded from GpuCode, launches in order on one queue, and a clock.
// Two backends: OpenCL (any OpenCL device; PoCL's CPU device in CI) and the
// CUDA driver (runtime/cuda_backend.h), each found with dlopen at first use
// so every binary starts on a machine without them.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/gpu_code.h"

namespace tessera::runtime {

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  virtual std::string device_name() const = 0;
  // Device memory, by handle; freed with the backend.
  virtual int allocate(size_t bytes) = 0;
  virtual void write(int buffer, const void* host, size_t bytes) = 0;
  virtual void read(int buffer, void* host, size_t bytes) = 0;
  // Copies between a buffer and memory of this device that another library
  // allocated (a framework's tensor, by its device pointer), on the queue:
  // no trip through the host. Backends whose buffers are not addressable
  // by pointer (OpenCL's) throw, naming the device.
  virtual void copy_from_device_pointer(int buffer, std::uintptr_t pointer, size_t bytes);
  virtual void copy_to_device_pointer(int buffer, std::uintptr_t pointer, size_t bytes);
  // Builds or loads the code's kernels (once per backend).
  virtual void load(const GpuCode& code) = 0;
  // Enqueues one launch; `buffers` are the handles of its parameters.
  virtual void launch(const GpuLaunch& launch, const std::vector<int>& buffers) = 0;
  // Waits for everything enqueued; returns the device seconds since the
  // last call of begin_timing() when one was made.
  virtual void begin_timing() = 0;
  virtual double finish() = 0;
  // Records the launches `enqueue` makes into one replayable graph (a CUDA
  // graph: a network's many small launches cost one), instead of running
  // them; false where the backend has no such thing (then nothing ran
  // either). The buffers must stay where they are while it is replayed.
  virtual bool record(const std::function<void()>& enqueue) {
    (void)enqueue;
    return false;
  }
  // Enqueues the recorded launches once.
  virtual void replay() {}

  // Evicts the device's cache (a GPU's L2) by writing a buffer twice its
  // size, so that the next launch reads its operands from device memory: a
  // cold-cache measurement, as a layer of a network meets its weights.
  void flush_cache() {
    const size_t bytes = 2 * cache_bytes();
    if (flush_buffer_ < 0) {
      flush_buffer_ = allocate(bytes);
      flush_data_.assign(bytes, 0);
    }
    write(flush_buffer_, flush_data_.data(), bytes);
  }

 protected:
  // The bytes of the device's last-level cache; 64 MiB where it is not known.
  virtual size_t cache_bytes() const { return size_t{64} << 20; }

 private:
  int flush_buffer_ = -1;
  std::vector<char> flush_data_;
};

// The backend for a code's dialect; throws tessera::Error naming why the
// device cannot be used ("libcuda.so.1 not found", "no OpenCL device").
std::unique_ptr<GpuBackend> make_gpu_backend(const std::string& dialect);

}  // namespace tessera::runtime
