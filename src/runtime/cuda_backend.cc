#include "runtime/cuda_backend.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <sstream>
#include <vector>

#include "support/forked_probe.h"
#include "tessera/error.h"

namespace tessera::runtime {

namespace {

// The driver API's few entry points, declared here as cuda.h (CUDA 12/13)
// has them, so that building needs no CUDA headers. Handles are opaque
// pointers; a device pointer is a 64-bit integer; CUresult 0 is success.
using CuResult = int;
using CuDevice = int;
using CuContext = void*;
using CuModule = void*;
using CuFunction = void*;
using CuStream = void*;
using CuEvent = void*;
using CuDevicePtr = unsigned long long;
using CuGraph = void*;
using CuGraphExec = void*;
constexpr int kCaptureModeThreadLocal = 1;
constexpr CuResult kErrorNotInitialized = 3;
constexpr int kAttrMaxThreadsPerBlock = 1, kAttrMaxSharedMemoryPerBlock = 8, kAttrMultiprocessorCount = 16,
              kAttrL2CacheSize = 38, kAttrComputeCapabilityMajor = 75, kAttrComputeCapabilityMinor = 76;

// The process that called cuInit, or 0. CUDA does not survive fork
// (support/forked_probe.h): a process asks about the device from a forked
// probe (device_probe below) and initialises CUDA only when it runs on the GPU.
std::atomic<pid_t> initialized_by{0};

struct Driver {
  std::string unavailable;
  CuResult (*init)(unsigned) = nullptr;
  CuResult (*get_error_name)(CuResult, const char**) = nullptr;
  CuResult (*device_get)(CuDevice*, int) = nullptr;
  CuResult (*device_get_count)(int*) = nullptr;
  CuResult (*device_get_name)(char*, int, CuDevice) = nullptr;
  CuResult (*device_get_attribute)(int*, int, CuDevice) = nullptr;
  CuResult (*primary_ctx_retain)(CuContext*, CuDevice) = nullptr;
  CuResult (*ctx_set_current)(CuContext) = nullptr;
  CuResult (*module_load_data)(CuModule*, const void*) = nullptr;
  CuResult (*module_unload)(CuModule) = nullptr;
  CuResult (*module_get_function)(CuFunction*, CuModule, const char*) = nullptr;
  CuResult (*mem_alloc)(CuDevicePtr*, size_t) = nullptr;
  CuResult (*mem_free)(CuDevicePtr) = nullptr;
  CuResult (*memcpy_htod)(CuDevicePtr, const void*, size_t) = nullptr;
  CuResult (*memcpy_dtoh)(void*, CuDevicePtr, size_t) = nullptr;
  CuResult (*memcpy_dtod_async)(CuDevicePtr, CuDevicePtr, size_t, CuStream) = nullptr;
  CuResult (*launch_kernel)(CuFunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            CuStream, void**, void**) = nullptr;
  CuResult (*stream_create)(CuStream*, unsigned) = nullptr;
  CuResult (*stream_synchronize)(CuStream) = nullptr;
  CuResult (*event_create)(CuEvent*, unsigned) = nullptr;
  CuResult (*event_record)(CuEvent, CuStream) = nullptr;
  CuResult (*event_synchronize)(CuEvent) = nullptr;
  CuResult (*event_elapsed_time)(float*, CuEvent, CuEvent) = nullptr;
  CuResult (*stream_begin_capture)(CuStream, int mode) = nullptr;
  CuResult (*stream_end_capture)(CuStream, CuGraph*) = nullptr;
  CuResult (*graph_instantiate)(CuGraphExec*, CuGraph, unsigned long long flags) = nullptr;
  CuResult (*graph_launch)(CuGraphExec, CuStream) = nullptr;
  CuResult (*graph_exec_destroy)(CuGraphExec) = nullptr;
  CuResult (*graph_destroy)(CuGraph) = nullptr;
};

template <typename Fn>
void bind(void* library, const char* symbol, Fn& fn, std::string& unavailable) {
  fn = reinterpret_cast<Fn>(dlsym(library, symbol));
  if (fn == nullptr && unavailable.empty()) unavailable = std::string("libcuda.so.1 lacks ") + symbol;
}

Driver load_driver() {
  Driver d;
  // Never closed: the driver keeps threads and contexts for the process's life.
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    d.unavailable = "libcuda.so.1 not found (no NVIDIA driver on this machine)";
    return d;
  }
  std::string& u = d.unavailable;
  bind(library, "cuInit", d.init, u);
  bind(library, "cuGetErrorName", d.get_error_name, u);
  bind(library, "cuDeviceGet", d.device_get, u);
  bind(library, "cuDeviceGetCount", d.device_get_count, u);
  bind(library, "cuDeviceGetName", d.device_get_name, u);
  bind(library, "cuDeviceGetAttribute", d.device_get_attribute, u);
  bind(library, "cuDevicePrimaryCtxRetain", d.primary_ctx_retain, u);
  bind(library, "cuCtxSetCurrent", d.ctx_set_current, u);
  bind(library, "cuModuleLoadData", d.module_load_data, u);
  bind(library, "cuModuleUnload", d.module_unload, u);
  bind(library, "cuModuleGetFunction", d.module_get_function, u);
  bind(library, "cuMemAlloc_v2", d.mem_alloc, u);
  bind(library, "cuMemFree_v2", d.mem_free, u);
  bind(library, "cuMemcpyHtoD_v2", d.memcpy_htod, u);
  bind(library, "cuMemcpyDtoH_v2", d.memcpy_dtoh, u);
  bind(library, "cuMemcpyDtoDAsync_v2", d.memcpy_dtod_async, u);
  bind(library, "cuLaunchKernel", d.launch_kernel, u);
  bind(library, "cuStreamCreate", d.stream_create, u);
  bind(library, "cuStreamSynchronize", d.stream_synchronize, u);
  bind(library, "cuEventCreate", d.event_create, u);
  bind(library, "cuEventRecord", d.event_record, u);
  bind(library, "cuEventSynchronize", d.event_synchronize, u);
  bind(library, "cuEventElapsedTime", d.event_elapsed_time, u);
  if (!u.empty()) return d;
  // Graphs are optional: without them every launch is enqueued by itself.
  std::string no_graphs;
  bind(library, "cuStreamBeginCapture_v2", d.stream_begin_capture, no_graphs);
  bind(library, "cuStreamEndCapture", d.stream_end_capture, no_graphs);
  bind(library, "cuGraphInstantiateWithFlags", d.graph_instantiate, no_graphs);
  bind(library, "cuGraphLaunch", d.graph_launch, no_graphs);
  bind(library, "cuGraphExecDestroy", d.graph_exec_destroy, no_graphs);
  bind(library, "cuGraphDestroy", d.graph_destroy, no_graphs);
  if (!no_graphs.empty()) d.stream_begin_capture = nullptr;
  int count = 0;
  initialized_by = ::getpid();
  if (const CuResult r = d.init(0); r != 0) {
    const char* name = nullptr;
    u = "cuInit: " + std::string(d.get_error_name(r, &name) == 0 && name ? name : "CUresult " + std::to_string(r));
    // CUDA_ERROR_NOT_INITIALIZED: this process is a fork of one that had
    // initialised CUDA, NVRTC's compile included.
    if (r == kErrorNotInitialized) u += " (a fork of a process that had initialised CUDA?)";
  } else if (d.device_get_count(&count) != 0 || count == 0) {
    u = "the NVIDIA driver finds no GPU";
  }
  return d;
}

const Driver& driver() {
  static const Driver d = load_driver();
  const pid_t by = initialized_by;
  if (by != 0 && by != ::getpid())
    throw Error("CUDA was initialised by process " + std::to_string(by) +
                " before it forked this one, and CUDA does not survive fork: measure GPU candidates from a "
                "process that has not itself run on the GPU");
  return d;
}

std::string error_name(CuResult r) {
  const char* name = nullptr;
  if (driver().get_error_name && driver().get_error_name(r, &name) == 0 && name) return name;
  return "CUresult " + std::to_string(r);
}

void check(CuResult r, const std::string& what) {
  if (r != 0) throw Error("CUDA: " + what + ": " + error_name(r));
}

int attribute(int attr, CuDevice dev) {
  int v = 0;
  check(driver().device_get_attribute(&v, attr, dev), "cuDeviceGetAttribute");
  return v;
}

class CudaBackend : public GpuBackend {
 public:
  CudaBackend() {
    const Driver& d = driver();
    if (!d.unavailable.empty()) throw Error("CUDA unavailable: " + d.unavailable);
    check(d.device_get(&device_, 0), "cuDeviceGet");
    check(d.primary_ctx_retain(&context_, device_), "cuDevicePrimaryCtxRetain");
    check(d.ctx_set_current(context_), "cuCtxSetCurrent");
    check(d.stream_create(&stream_, 0), "cuStreamCreate");
    check(d.event_create(&start_, 0), "cuEventCreate");
    check(d.event_create(&end_, 0), "cuEventCreate");
    arch_ = attribute(kAttrComputeCapabilityMajor, device_) * 10 + attribute(kAttrComputeCapabilityMinor, device_);
    l2_bytes_ = static_cast<size_t>(attribute(kAttrL2CacheSize, device_));
    char name[256] = {};
    check(d.device_get_name(name, sizeof name, device_), "cuDeviceGetName");
    name_ = name;
  }
  ~CudaBackend() override {
    if (graph_exec_) driver().graph_exec_destroy(graph_exec_);
    if (graph_) driver().graph_destroy(graph_);
    for (CuDevicePtr p : buffers_) driver().mem_free(p);
    if (module_) driver().module_unload(module_);
  }

  std::string device_name() const override { return name_ + " (sm_" + std::to_string(arch_) + ")"; }
  int allocate(size_t bytes) override {
    CuDevicePtr p = 0;
    check(driver().mem_alloc(&p, bytes), "cuMemAlloc of " + std::to_string(bytes) + " bytes");
    buffers_.push_back(p);
    return static_cast<int>(buffers_.size()) - 1;
  }
  void write(int buffer, const void* host, size_t bytes) override {
    check(driver().memcpy_htod(buffers_.at(buffer), host, bytes), "cuMemcpyHtoD");
  }
  void read(int buffer, void* host, size_t bytes) override {
    check(driver().stream_synchronize(stream_), "cuStreamSynchronize");
    check(driver().memcpy_dtoh(host, buffers_.at(buffer), bytes), "cuMemcpyDtoH");
  }
  // A framework's tensor is memory of the primary context this backend
  // retains too: one address space, copied on this backend's stream.
  void copy_from_device_pointer(int buffer, std::uintptr_t pointer, size_t bytes) override {
    check(driver().memcpy_dtod_async(buffers_.at(buffer), pointer, bytes, stream_), "cuMemcpyDtoDAsync (input)");
  }
  void copy_to_device_pointer(int buffer, std::uintptr_t pointer, size_t bytes) override {
    check(driver().memcpy_dtod_async(pointer, buffers_.at(buffer), bytes, stream_), "cuMemcpyDtoDAsync (output)");
  }
  void load(const GpuCode& code) override {
    // The cubin runs on its own arch only; PTX is compiled by the driver
    // for the device's (newer) one.
    const bool cubin = code.arch == arch_ && !code.cubin.empty();
    if (!cubin && (code.arch > arch_ || code.ptx.empty()))
      throw Error("CUDA: the kernels were compiled for sm_" + std::to_string(code.arch) + "; this device is sm_" +
                  std::to_string(arch_) + " (compile with --target \"cuda -arch=sm_" + std::to_string(arch_) + "\")");
    const std::string image = cubin ? code.cubin : code.ptx;  // PTX is NUL-terminated by c_str()
    check(driver().module_load_data(&module_, image.c_str()), cubin ? "loading the cubin" : "loading the PTX");
    for (const auto& [name, kernel] : code.kernels)
      for (const GpuLaunch& l : kernel.launches) {
        CuFunction f = nullptr;
        check(driver().module_get_function(&f, module_, l.name.c_str()), "kernel '" + l.name + "'");
        functions_[l.name] = f;
      }
  }
  void launch(const GpuLaunch& l, const std::vector<int>& buffers) override {
    std::vector<CuDevicePtr> pointers;
    for (int b : buffers) pointers.push_back(buffers_.at(b));
    std::vector<void*> params;
    for (CuDevicePtr& p : pointers) params.push_back(&p);
    check(driver().launch_kernel(functions_.at(l.name), unsigned(l.grid[0]), unsigned(l.grid[1]), unsigned(l.grid[2]),
                                 unsigned(l.block[0]), unsigned(l.block[1]), unsigned(l.block[2]), 0, stream_,
                                 params.data(), nullptr),
          "launching kernel '" + l.name + "'");
  }
  bool record(const std::function<void()>& enqueue) override {
    const Driver& d = driver();
    if (!d.stream_begin_capture || graph_exec_) return graph_exec_ != nullptr;
    check(d.stream_begin_capture(stream_, kCaptureModeThreadLocal), "cuStreamBeginCapture");
    try {
      enqueue();
    } catch (...) {
      CuGraph abandoned = nullptr;
      d.stream_end_capture(stream_, &abandoned);
      if (abandoned) d.graph_destroy(abandoned);
      throw;
    }
    check(d.stream_end_capture(stream_, &graph_), "cuStreamEndCapture");
    check(d.graph_instantiate(&graph_exec_, graph_, 0), "cuGraphInstantiate");
    return true;
  }
  void replay() override { check(driver().graph_launch(graph_exec_, stream_), "cuGraphLaunch"); }

  void begin_timing() override {
    check(driver().event_record(start_, stream_), "cuEventRecord");
    timing_ = true;
  }
  double finish() override {
    if (!timing_) {
      check(driver().stream_synchronize(stream_), "cuStreamSynchronize");
      return 0;
    }
    timing_ = false;
    check(driver().event_record(end_, stream_), "cuEventRecord");
    check(driver().event_synchronize(end_), "cuEventSynchronize");
    float ms = 0;
    check(driver().event_elapsed_time(&ms, start_, end_), "cuEventElapsedTime");
    return ms * 1e-3;
  }

 protected:
  size_t cache_bytes() const override { return l2_bytes_ > 0 ? l2_bytes_ : GpuBackend::cache_bytes(); }

 private:
  CuDevice device_ = 0;
  CuContext context_ = nullptr;
  CuStream stream_ = nullptr;
  CuEvent start_ = nullptr, end_ = nullptr;
  CuModule module_ = nullptr;
  CuGraph graph_ = nullptr;
  CuGraphExec graph_exec_ = nullptr;
  int arch_ = 0;
  size_t l2_bytes_ = 0;
  std::string name_;
  bool timing_ = false;
  std::vector<CuDevicePtr> buffers_;
  std::map<std::string, CuFunction> functions_;
};

}  // namespace

namespace {

// What cuda_unavailable_reason and cuda_device_info answer.
struct DeviceProbe {
  std::string unavailable;
  std::optional<CudaDeviceInfo> info;
};

DeviceProbe probe_here() {
  DeviceProbe p;
  try {
    p.unavailable = driver().unavailable;
    if (!p.unavailable.empty()) return p;
    CuDevice dev = 0;
    check(driver().device_get(&dev, 0), "cuDeviceGet");
    CudaDeviceInfo info;
    char name[256] = {};
    check(driver().device_get_name(name, sizeof name, dev), "cuDeviceGetName");
    info.name = name;
    info.arch = attribute(kAttrComputeCapabilityMajor, dev) * 10 + attribute(kAttrComputeCapabilityMinor, dev);
    info.max_threads_per_block = attribute(kAttrMaxThreadsPerBlock, dev);
    info.max_shared_memory_per_block = attribute(kAttrMaxSharedMemoryPerBlock, dev);
    info.multiprocessors = attribute(kAttrMultiprocessorCount, dev);
    p.info = info;
  } catch (const std::exception& e) {
    p.unavailable = e.what();
  }
  return p;
}

// A probe's answer through a pipe, a line each: the reason (empty when a
// device was found), then the device's name and four numbers.
std::string to_lines(const DeviceProbe& p) {
  std::ostringstream out;
  out << p.unavailable << '\n';
  if (p.info)
    out << p.info->name << '\n'
        << p.info->arch << ' ' << p.info->max_threads_per_block << ' ' << p.info->max_shared_memory_per_block << ' '
        << p.info->multiprocessors << '\n';
  return out.str();
}

DeviceProbe from_lines(const std::string& text) {
  std::istringstream in(text);
  DeviceProbe p;
  std::getline(in, p.unavailable);
  if (!p.unavailable.empty()) return p;
  CudaDeviceInfo info;
  std::getline(in, info.name);
  if (in >> info.arch >> info.max_threads_per_block >> info.max_shared_memory_per_block >> info.multiprocessors)
    p.info = info;
  else
    p.unavailable = "the CUDA driver probe answered \"" + text.substr(0, 200) + "\", which is no device description";
  return p;
}

// Asked in a forked child (support/forked_probe.h), so that this process can
// go on forking measurement children that use the GPU.
DeviceProbe probe_in_child() {
  const support::ProbeAnswer a = support::ask_in_forked_child([] { return to_lines(probe_here()); }, "the CUDA driver");
  if (!a.answered) return {a.text, {}};
  return from_lines(a.text);
}

const DeviceProbe& device_probe() {
  static const DeviceProbe p = initialized_by == ::getpid() ? probe_here() : probe_in_child();
  return p;
}

}  // namespace

std::string cuda_unavailable_reason() { return device_probe().unavailable; }

std::optional<CudaDeviceInfo> cuda_device_info() { return device_probe().info; }

std::unique_ptr<GpuBackend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace tessera::runtime
