#pragma once
// One OpenCL device, reached through libOpenCL loaded with dlopen at first use:
// a binary linked with this starts (and merely reports OpenCL missing) on a
// machine without an OpenCL loader or driver. Users need no OpenCL headers;
// OpenCL objects appear here as opaque handles.
#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tessera::runtime {

// Why OpenCL cannot be used here ("libOpenCL.so.1 not found ...", "no OpenCL
// device ..."), or "" when it can.
std::string opencl_unavailable_reason();

// The first GPU of any platform, else the first device of the first platform
// that has one; one context and one in-order, profiling command queue.
// Thread-safe: the queue (and the kernel cache) are used under one mutex.
class OpenClDevice {
  // Releases an OpenCL object of one kind (the functions live in libOpenCL).
  struct ReleaseMem {
    void operator()(void* mem) const;
  };
  struct ReleaseProgram {
    void operator()(void* program) const;
  };
  struct ReleaseKernel {
    void operator()(void* kernel) const;
  };
  struct ReleaseQueue {
    void operator()(void* queue) const;
  };
  struct ReleaseContext {
    void operator()(void* context) const;
  };
  // A kernel object (cl_kernel) and how many arguments it takes.
  struct Kernel {
    std::unique_ptr<void, ReleaseKernel> handle;
    unsigned num_args = 0;
  };

 public:
  // A device buffer (cl_mem), released with this; move-only.
  class Buffer {
   public:
    Buffer() = default;
    size_t bytes() const { return bytes_; }

   private:
    friend class OpenClDevice;
    std::unique_ptr<void, ReleaseMem> mem_;
    size_t bytes_ = 0;
  };

  // A program built for the device (cl_program), with the kernels created
  // from it so far; released with this; move-only.
  class Program {
   public:
    Program() = default;

   private:
    friend class OpenClDevice;
    std::unique_ptr<void, ReleaseProgram> program_;
    // Kernel objects by name, created at first launch (under the device's
    // mutex: a kernel's arguments are state shared by its launches).
    mutable std::map<std::string, Kernel> kernels_;
  };

  // The device, set up at the first call; throws tessera::Error with the
  // reason when OpenCL is unavailable.
  static OpenClDevice& get();

  OpenClDevice(const OpenClDevice&) = delete;
  OpenClDevice& operator=(const OpenClDevice&) = delete;

  std::string name() const { return name_; }  // "<device> (<platform>)"
  size_t max_work_group_size() const { return max_work_group_size_; }
  size_t local_memory_bytes() const { return local_memory_bytes_; }

  Buffer allocate(size_t bytes);
  // Blocking copies of the first `bytes` of the buffer.
  void write(Buffer& buffer, const void* host, size_t bytes);
  void read(const Buffer& buffer, void* host, size_t bytes);

  // Builds OpenCL C `source`; throws tessera::Error holding the build log
  // (its first 40 lines) on failure.
  Program build(const std::string& source, const std::string& options = "");

  // Runs kernel `name` of `program` with `args` as its arguments in order,
  // over a global size of grid[i] * block[i] in work-groups of block[i] (3
  // dimensions), and waits for it. Throws tessera::Error naming the kernel and
  // the OpenCL error code (CL_INVALID_KERNEL_NAME, CL_INVALID_WORK_GROUP_SIZE, ...).
  void launch(const Program& program, const std::string& name, const std::vector<const Buffer*>& args,
              std::array<size_t, 3> grid, std::array<size_t, 3> block);
  // The same; returns the kernel's device time in seconds (profiling events).
  double launch_timed(const Program& program, const std::string& name, const std::vector<const Buffer*>& args,
                      std::array<size_t, 3> grid, std::array<size_t, 3> block);

 private:
  OpenClDevice();
  // launch and launch_timed: the device time in seconds when `timed`, else 0.
  double run(const Program& program, const std::string& name, const std::vector<const Buffer*>& args,
             std::array<size_t, 3> grid, std::array<size_t, 3> block, bool timed);

  void* device_ = nullptr;  // cl_device_id: not reference counted
  std::unique_ptr<void, ReleaseContext> context_;
  std::unique_ptr<void, ReleaseQueue> queue_;
  std::string name_;
  size_t max_work_group_size_ = 0;
  size_t local_memory_bytes_ = 0;
  std::mutex mutex_;
};

}  // namespace tessera::runtime
