// One OpenCL device through libOpenCL, found with dlopen at first use.
#include "runtime/opencl_device.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "support/first_lines.h"
#include "support/forked_probe.h"
#include "tessera/error.h"

namespace tessera::runtime {
namespace {

// The OpenCL 1.2 types, constants and entry points used, declared here (as
// CL/cl.h has them) so that building Tessera needs no OpenCL headers. Every
// object type (cl_platform_id, cl_mem, cl_kernel, ...) is an opaque pointer;
// the bitfields (cl_device_type, cl_mem_flags, queue properties) are cl_ulong.
using Handle = void*;
using ClInt = int32_t;
using ClUint = uint32_t;
using ClUlong = uint64_t;

constexpr ClInt kSuccess = 0;
constexpr ClUint kTrue = 1;
constexpr ClUlong kDeviceTypeGpu = 1 << 2;
constexpr ClUlong kDeviceTypeAll = 0xFFFFFFFF;
constexpr ClUint kPlatformName = 0x0902;
constexpr ClUint kDeviceMaxWorkGroupSize = 0x1004;  // size_t
constexpr ClUint kDeviceLocalMemSize = 0x1023;      // cl_ulong
constexpr ClUint kDeviceName = 0x102B;
constexpr ClUlong kQueueProfilingEnable = 1 << 1;
constexpr ClUlong kMemReadWrite = 1 << 0;
constexpr ClUint kProgramBuildLog = 0x1183;
constexpr ClUint kKernelNumArgs = 0x1191;          // cl_uint
constexpr ClUint kProfilingCommandStart = 0x1282;  // cl_ulong nanoseconds
constexpr ClUint kProfilingCommandEnd = 0x1283;

// A driver built on another LLVM than ours (PoCL on Debian 12: LLVM 15,
// with its own clang; Tessera: LLVM 16) would bind its LLVM calls to the
// copy this process loaded first, and crash compiling its first kernel.
// Loading each registered driver (/etc/OpenCL/vendors/*.icd, a library name
// per file) first with RTLD_DEEPBIND makes it and its libraries prefer their
// own symbols; the ICD loader's dlopen of the same name then returns it.
void preload_drivers_apart() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/etc/OpenCL/vendors", ec)) {
    if (entry.path().extension() != ".icd") continue;
    std::ifstream in(entry.path());
    std::string library;
    std::getline(in, library);
    while (!library.empty() && std::isspace(static_cast<unsigned char>(library.back()))) library.pop_back();
    if (!library.empty()) dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  }
}

// Opens libOpenCL; never closed, as drivers keep threads and state for the
// life of the process. nullptr when absent.
void* open_library() {
  preload_drivers_apart();
  void* library = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  return library != nullptr ? library : dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
}

// One entry point of the library, looked up when constructed; a missing one
// makes the library unusable (`unavailable` names the first).
template <typename Signature>
struct Entry;
template <typename R, typename... Args>
struct Entry<R(Args...)> {
  R (*fn)(Args...) = nullptr;
  Entry(void* library, const char* symbol, std::string& unavailable) {
    if (library != nullptr) fn = reinterpret_cast<R (*)(Args...)>(dlsym(library, symbol));
    if (fn == nullptr && unavailable.empty()) unavailable = std::string("libOpenCL lacks ") + symbol;
  }
  R operator()(Args... args) const { return fn(args...); }
};

struct OpenCl {
  void* library = open_library();
  std::string unavailable = library == nullptr ? "libOpenCL.so.1 not found" : "";
  using Info = ClInt(Handle, ClUint, size_t, void*, size_t*);  // the clGet*Info functions
  using ContextNotify = void (*)(const char*, const void*, size_t, void*);
  Entry<ClInt(ClUint, Handle*, ClUint*)> get_platform_ids{library, "clGetPlatformIDs", unavailable};
  Entry<Info> get_platform_info{library, "clGetPlatformInfo", unavailable};
  Entry<ClInt(Handle, ClUlong, ClUint, Handle*, ClUint*)> get_device_ids{library, "clGetDeviceIDs", unavailable};
  Entry<Info> get_device_info{library, "clGetDeviceInfo", unavailable};
  Entry<Handle(const intptr_t*, ClUint, const Handle*, ContextNotify, void*, ClInt*)> create_context{
      library, "clCreateContext", unavailable};
  // Deprecated by OpenCL 2.0 but kept by every loader; 1.2 drivers lack the
  // replacement (clCreateCommandQueueWithProperties).
  Entry<Handle(Handle, Handle, ClUlong, ClInt*)> create_command_queue{library, "clCreateCommandQueue", unavailable};
  Entry<Handle(Handle, ClUlong, size_t, void*, ClInt*)> create_buffer{library, "clCreateBuffer", unavailable};
  Entry<ClInt(Handle, Handle, ClUint, size_t, size_t, const void*, ClUint, const Handle*, Handle*)>
      enqueue_write_buffer{library, "clEnqueueWriteBuffer", unavailable};
  Entry<ClInt(Handle, Handle, ClUint, size_t, size_t, void*, ClUint, const Handle*, Handle*)> enqueue_read_buffer{
      library, "clEnqueueReadBuffer", unavailable};
  Entry<Handle(Handle, ClUint, const char**, const size_t*, ClInt*)> create_program_with_source{
      library, "clCreateProgramWithSource", unavailable};
  Entry<ClInt(Handle, ClUint, const Handle*, const char*, void (*)(Handle, void*), void*)> build_program{
      library, "clBuildProgram", unavailable};
  Entry<ClInt(Handle, Handle, ClUint, size_t, void*, size_t*)> get_program_build_info{library, "clGetProgramBuildInfo",
                                                                                      unavailable};
  Entry<Handle(Handle, const char*, ClInt*)> create_kernel{library, "clCreateKernel", unavailable};
  Entry<Info> get_kernel_info{library, "clGetKernelInfo", unavailable};
  Entry<ClInt(Handle, ClUint, size_t, const void*)> set_kernel_arg{library, "clSetKernelArg", unavailable};
  Entry<ClInt(Handle, Handle, ClUint, const size_t*, const size_t*, const size_t*, ClUint, const Handle*, Handle*)>
      enqueue_nd_range_kernel{library, "clEnqueueNDRangeKernel", unavailable};
  Entry<ClInt(Handle)> finish{library, "clFinish", unavailable};
  Entry<ClInt(ClUint, const Handle*)> wait_for_events{library, "clWaitForEvents", unavailable};
  Entry<Info> get_event_profiling_info{library, "clGetEventProfilingInfo", unavailable};
  Entry<ClInt(Handle)> release_event{library, "clReleaseEvent", unavailable};
  Entry<ClInt(Handle)> release_kernel{library, "clReleaseKernel", unavailable};
  Entry<ClInt(Handle)> release_program{library, "clReleaseProgram", unavailable};
  Entry<ClInt(Handle)> release_mem_object{library, "clReleaseMemObject", unavailable};
  Entry<ClInt(Handle)> release_command_queue{library, "clReleaseCommandQueue", unavailable};
  Entry<ClInt(Handle)> release_context{library, "clReleaseContext", unavailable};
};

const OpenCl& cl() {
  static const OpenCl api;
  return api;
}

// The name of an OpenCL error code, for messages. OpenCL 1.2's codes run
// from -1 down, and its CL_INVALID_* ones from -30 down: the n-th word of
// these lists names code -n (resp. -29 - n).
std::string error_name(ClInt code) {
  constexpr std::string_view kFailures =
      "DEVICE_NOT_FOUND DEVICE_NOT_AVAILABLE COMPILER_NOT_AVAILABLE MEM_OBJECT_ALLOCATION_FAILURE "
      "OUT_OF_RESOURCES OUT_OF_HOST_MEMORY PROFILING_INFO_NOT_AVAILABLE MEM_COPY_OVERLAP IMAGE_FORMAT_MISMATCH "
      "IMAGE_FORMAT_NOT_SUPPORTED BUILD_PROGRAM_FAILURE MAP_FAILURE MISALIGNED_SUB_BUFFER_OFFSET "
      "EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST COMPILE_PROGRAM_FAILURE LINKER_NOT_AVAILABLE "
      "LINK_PROGRAM_FAILURE DEVICE_PARTITION_FAILED KERNEL_ARG_INFO_NOT_AVAILABLE";
  constexpr std::string_view kInvalid =
      "VALUE DEVICE_TYPE PLATFORM DEVICE CONTEXT QUEUE_PROPERTIES COMMAND_QUEUE HOST_PTR MEM_OBJECT "
      "IMAGE_FORMAT_DESCRIPTOR IMAGE_SIZE SAMPLER BINARY BUILD_OPTIONS PROGRAM PROGRAM_EXECUTABLE KERNEL_NAME "
      "KERNEL_DEFINITION KERNEL ARG_INDEX ARG_VALUE ARG_SIZE KERNEL_ARGS WORK_DIMENSION WORK_GROUP_SIZE "
      "WORK_ITEM_SIZE GLOBAL_OFFSET EVENT_WAIT_LIST EVENT OPERATION GL_OBJECT BUFFER_SIZE MIP_LEVEL "
      "GLOBAL_WORK_SIZE PROPERTY IMAGE_DESCRIPTOR COMPILER_OPTIONS LINKER_OPTIONS DEVICE_PARTITION_COUNT";
  auto word = [](std::string_view words, int n) {  // the n-th (from 1) word, "" past the end
    for (; n > 1 && !words.empty(); --n) {
      size_t space = words.find(' ');
      words = space == std::string_view::npos ? std::string_view() : words.substr(space + 1);
    }
    return std::string(words.substr(0, words.find(' ')));
  };
  std::string name;
  if (code <= -30) name = "INVALID_" + word(kInvalid, -code - 29);
  if (code < 0 && code > -30) name = word(kFailures, -code);
  if (code == -1001) name = "PLATFORM_NOT_FOUND_KHR";  // from the ICD loader
  if (name.empty() || name == "INVALID_") return "OpenCL error " + std::to_string(code);
  return "CL_" + name;
}

void check(ClInt code, const std::string& what) {
  if (code != kSuccess) throw Error("OpenCL: " + what + ": " + error_name(code));
}

// A string-valued property; OpenCL counts the terminating NUL in its sizes.
template <typename Query>
std::string info_string(Query query, Handle object, ClUint param) {
  size_t size = 0;
  if (query(object, param, 0, nullptr, &size) != kSuccess || size == 0) return "";
  std::string value(size, '\0');
  if (query(object, param, size, value.data(), nullptr) != kSuccess) return "";
  while (!value.empty() && value.back() == '\0') value.pop_back();
  return value;
}

// The device chosen once per process, or why there is none.
struct Selection {
  std::string unavailable;
  Handle platform = nullptr;
  Handle device = nullptr;
};

Selection select_device() {
  Selection selection;
  if (!cl().unavailable.empty()) {
    selection.unavailable = cl().unavailable;
    return selection;
  }
  // An ICD loader with no driver installed answers CL_PLATFORM_NOT_FOUND_KHR.
  ClUint count = 0;
  ClInt code = cl().get_platform_ids(0, nullptr, &count);
  if (code != kSuccess || count == 0) {
    selection.unavailable = "no OpenCL platform (clGetPlatformIDs: " + error_name(code) + ")";
    return selection;
  }
  std::vector<Handle> platforms(count);
  check(cl().get_platform_ids(count, platforms.data(), nullptr), "clGetPlatformIDs");
  for (ClUlong type : {kDeviceTypeGpu, kDeviceTypeAll}) {
    for (Handle platform : platforms) {
      Handle device = nullptr;
      ClUint found = 0;
      if (cl().get_device_ids(platform, type, 1, &device, &found) == kSuccess && found > 0) {
        selection.platform = platform;
        selection.device = device;
        return selection;
      }
    }
  }
  selection.unavailable = "no OpenCL device on " + std::to_string(count) + " platform(s)";
  return selection;
}

// The process that chose the device, or 0: a driver's threads do not survive
// fork (support/forked_probe.h), so a forked child of that process must not use it.
std::atomic<pid_t> selected_by{0};

const Selection& selection() {
  static const Selection chosen = [] {
    selected_by = ::getpid();
    return select_device();
  }();
  const pid_t by = selected_by;
  if (by != ::getpid())
    throw Error("OpenCL was initialised by process " + std::to_string(by) +
                " before it forked this one, and its driver does not survive fork: measure GPU candidates from a "
                "process that has not itself used OpenCL");
  return chosen;
}

std::string opencl_reason_here() {
  try {
    return selection().unavailable;
  } catch (const std::exception& e) {
    return e.what();
  }
}

// Copies of `bytes` must fit the buffer's `capacity`.
void check_copy(const char* verb, size_t bytes, size_t capacity) {
  if (bytes > capacity) {
    throw Error(std::string("OpenCL: ") + verb + " " + std::to_string(bytes) + " bytes of a buffer of " +
                std::to_string(capacity));
  }
}

std::string sizes(const std::array<size_t, 3>& s) {
  return std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" + std::to_string(s[2]);
}

}  // namespace

std::string opencl_unavailable_reason() {
  if (selected_by == ::getpid()) return selection().unavailable;
  // Asked in a forked child while this process does not use OpenCL, so that
  // asking leaves it free to fork measurement children that use the device:
  // the child's reason ("" for a device), or why the child did not answer.
  static const std::string probed =
      support::ask_in_forked_child([] { return opencl_reason_here(); }, "the OpenCL driver").text;
  return probed;
}

void OpenClDevice::ReleaseMem::operator()(void* mem) const { cl().release_mem_object(mem); }
void OpenClDevice::ReleaseProgram::operator()(void* program) const { cl().release_program(program); }
void OpenClDevice::ReleaseKernel::operator()(void* kernel) const { cl().release_kernel(kernel); }
void OpenClDevice::ReleaseQueue::operator()(void* queue) const { cl().release_command_queue(queue); }
void OpenClDevice::ReleaseContext::operator()(void* context) const { cl().release_context(context); }

OpenClDevice& OpenClDevice::get() {
  if (std::string reason = opencl_unavailable_reason(); !reason.empty()) {
    throw Error("OpenCL unavailable: " + reason);
  }
  selection();  // throws in a forked child of a process that uses OpenCL: its device is the parent's
  // Built once; a failure (thrown) leaves the next call to try again.
  static OpenClDevice device;
  return device;
}

OpenClDevice::OpenClDevice() : device_(selection().device) {
  ClInt code = kSuccess;
  context_.reset(cl().create_context(nullptr, 1, &device_, nullptr, nullptr, &code));
  check(code, "clCreateContext");
  queue_.reset(cl().create_command_queue(context_.get(), device_, kQueueProfilingEnable, &code));
  check(code, "clCreateCommandQueue");
  name_ = info_string(cl().get_device_info, device_, kDeviceName) + " (" +
          info_string(cl().get_platform_info, selection().platform, kPlatformName) + ")";
  check(cl().get_device_info(device_, kDeviceMaxWorkGroupSize, sizeof(size_t), &max_work_group_size_, nullptr),
        "CL_DEVICE_MAX_WORK_GROUP_SIZE");
  ClUlong local = 0;
  check(cl().get_device_info(device_, kDeviceLocalMemSize, sizeof(local), &local, nullptr), "CL_DEVICE_LOCAL_MEM_SIZE");
  local_memory_bytes_ = static_cast<size_t>(local);
}

OpenClDevice::Buffer OpenClDevice::allocate(size_t bytes) {
  ClInt code = kSuccess;
  Buffer buffer;
  buffer.mem_.reset(cl().create_buffer(context_.get(), kMemReadWrite, bytes, nullptr, &code));
  check(code, "clCreateBuffer of " + std::to_string(bytes) + " bytes");
  buffer.bytes_ = bytes;
  return buffer;
}

void OpenClDevice::write(Buffer& buffer, const void* host, size_t bytes) {
  check_copy("writing", bytes, buffer.bytes_);
  if (bytes == 0) return;
  std::lock_guard lock(mutex_);
  check(cl().enqueue_write_buffer(queue_.get(), buffer.mem_.get(), kTrue, 0, bytes, host, 0, nullptr, nullptr),
        "clEnqueueWriteBuffer");
}

void OpenClDevice::read(const Buffer& buffer, void* host, size_t bytes) {
  check_copy("reading", bytes, buffer.bytes_);
  if (bytes == 0) return;
  std::lock_guard lock(mutex_);
  check(cl().enqueue_read_buffer(queue_.get(), buffer.mem_.get(), kTrue, 0, bytes, host, 0, nullptr, nullptr),
        "clEnqueueReadBuffer");
}

OpenClDevice::Program OpenClDevice::build(const std::string& source, const std::string& options) {
  ClInt code = kSuccess;
  const char* text = source.c_str();
  size_t length = source.size();
  Program program;
  program.program_.reset(cl().create_program_with_source(context_.get(), 1, &text, &length, &code));
  check(code, "clCreateProgramWithSource");
  // Building needs no queue, so no lock: OpenCL's API is thread-safe apart
  // from clSetKernelArg.
  code = cl().build_program(program.program_.get(), 1, &device_, options.c_str(), nullptr, nullptr);
  if (code != kSuccess) {
    std::string log = info_string(
        [this](Handle p, ClUint param, size_t size, void* value, size_t* size_ret) {
          return cl().get_program_build_info(p, device_, param, size, value, size_ret);
        },
        program.program_.get(), kProgramBuildLog);
    throw Error("OpenCL: clBuildProgram: " + error_name(code) + (options.empty() ? "" : " (options: " + options + ")") +
                ":\n" + support::first_lines(log, 40));
  }
  return program;
}

void OpenClDevice::launch(const Program& program, const std::string& name, const std::vector<const Buffer*>& args,
                          std::array<size_t, 3> grid, std::array<size_t, 3> block) {
  run(program, name, args, grid, block, false);
}

double OpenClDevice::launch_timed(const Program& program, const std::string& name,
                                  const std::vector<const Buffer*>& args, std::array<size_t, 3> grid,
                                  std::array<size_t, 3> block) {
  return run(program, name, args, grid, block, true);
}

double OpenClDevice::run(const Program& program, const std::string& name, const std::vector<const Buffer*>& args,
                         std::array<size_t, 3> grid, std::array<size_t, 3> block, bool timed) {
  const std::string what = "kernel '" + name + "' (grid " + sizes(grid) + ", block " + sizes(block) + ")";
  if (!program.program_) throw Error("OpenCL: launching " + what + " of an unbuilt program");
  std::array<size_t, 3> global{};
  for (int i = 0; i < 3; ++i) global[i] = grid[i] * block[i];
  // The kernel's arguments are state of the cached kernel object: set and
  // enqueued under one lock so that concurrent launches cannot mix them.
  std::lock_guard lock(mutex_);
  auto it = program.kernels_.find(name);
  if (it == program.kernels_.end()) {
    ClInt code = kSuccess;
    Kernel created;
    created.handle.reset(cl().create_kernel(program.program_.get(), name.c_str(), &code));
    check(code, "clCreateKernel for " + what);
    ClUint num_args = 0;
    check(cl().get_kernel_info(created.handle.get(), kKernelNumArgs, sizeof(num_args), &num_args, nullptr),
          "CL_KERNEL_NUM_ARGS of " + what);
    created.num_args = num_args;
    it = program.kernels_.emplace(name, std::move(created)).first;
  }
  // A cached kernel keeps the arguments of its last launch: too few given
  // here would silently reuse those, so the count must match exactly.
  if (args.size() != it->second.num_args) {
    throw Error("OpenCL: " + what + " takes " + std::to_string(it->second.num_args) + " arguments, given " +
                std::to_string(args.size()));
  }
  Handle kernel = it->second.handle.get();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == nullptr || !args[i]->mem_) {
      throw Error("OpenCL: argument " + std::to_string(i) + " of " + what + " is no buffer");
    }
    Handle mem = args[i]->mem_.get();
    check(cl().set_kernel_arg(kernel, static_cast<ClUint>(i), sizeof(Handle), &mem),
          "clSetKernelArg " + std::to_string(i) + " of " + what);
  }
  Handle event = nullptr;
  check(cl().enqueue_nd_range_kernel(queue_.get(), kernel, 3, nullptr, global.data(), block.data(), 0, nullptr,
                                     timed ? &event : nullptr),
        "clEnqueueNDRangeKernel of " + what);
  std::unique_ptr<void, ClInt (*)(Handle)> release_event(event, cl().release_event.fn);  // null unless timed
  if (!timed) {
    check(cl().finish(queue_.get()), "clFinish after " + what);
    return 0.0;
  }
  check(cl().wait_for_events(1, &event), "clWaitForEvents for " + what);
  ClUlong start = 0, end = 0;
  check(cl().get_event_profiling_info(event, kProfilingCommandStart, sizeof(start), &start, nullptr),
        "CL_PROFILING_COMMAND_START of " + what);
  check(cl().get_event_profiling_info(event, kProfilingCommandEnd, sizeof(end), &end, nullptr),
        "CL_PROFILING_COMMAND_END of " + what);
  return end > start ? static_cast<double>(end - start) * 1e-9 : 0.0;
}

}  // namespace tessera::runtime
