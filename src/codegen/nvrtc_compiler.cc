// CUDA C to cubin and PTX through NVRTC, found with dlopen at first use.
#include "codegen/nvrtc_compiler.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

#include "support/first_lines.h"
#include "support/fd_io.h"
#include "support/forked_probe.h"
#include "tessera/error.h"

namespace tessera::codegen {
namespace {

// The few NVRTC entry points used, declared here (as nvrtc.h of CUDA 13 has
// them) so that building Tessera needs no CUDA headers. nvrtcResult is an enum
// of int size whose 0 is NVRTC_SUCCESS; nvrtcProgram is an opaque pointer.
using NvrtcResult = int;
using NvrtcProgram = void*;
constexpr NvrtcResult kNvrtcSuccess = 0;

struct Nvrtc {
  std::string unavailable;  // why the library cannot be used, "" when loaded
  const char* (*error_string)(NvrtcResult) = nullptr;
  NvrtcResult (*create_program)(NvrtcProgram*, const char* source, const char* name, int num_headers,
                                const char* const* headers, const char* const* include_names) = nullptr;
  NvrtcResult (*destroy_program)(NvrtcProgram*) = nullptr;
  NvrtcResult (*compile_program)(NvrtcProgram, int num_options, const char* const* options) = nullptr;
  NvrtcResult (*log_size)(NvrtcProgram, size_t*) = nullptr;
  NvrtcResult (*log)(NvrtcProgram, char*) = nullptr;
  NvrtcResult (*ptx_size)(NvrtcProgram, size_t*) = nullptr;
  NvrtcResult (*ptx)(NvrtcProgram, char*) = nullptr;
  NvrtcResult (*cubin_size)(NvrtcProgram, size_t*) = nullptr;
  NvrtcResult (*cubin)(NvrtcProgram, char*) = nullptr;
};

template <typename Fn>
void bind(void* library, const char* symbol, Fn& fn, std::string& unavailable) {
  fn = reinterpret_cast<Fn>(dlsym(library, symbol));
  if (fn == nullptr && unavailable.empty()) unavailable = std::string("libnvrtc lacks ") + symbol;
}

Nvrtc load_nvrtc() {
  // The soname first (the loader's search path, ldconfig), then the toolkit's
  // usual places, for machines where it is not on the search path.
  std::vector<std::string> candidates = {"libnvrtc.so.13", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13"};
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0') {
    for (const char* file : {"/lib64/libnvrtc.so.13", "/lib64/libnvrtc.so"}) {
      std::string path = std::string(home) + file;
      if (std::find(candidates.begin(), candidates.end(), path) == candidates.end()) candidates.push_back(path);
    }
  }
  Nvrtc api;
  void* library = nullptr;
  for (const auto& candidate : candidates) {
    // Never closed: NVRTC loads its builtins library and may keep state for
    // the life of the process.
    library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) break;
  }
  if (library == nullptr) {
    api.unavailable = "libnvrtc.so.13 not found (tried";
    for (const auto& candidate : candidates) api.unavailable += " " + candidate;
    api.unavailable += ")";
    return api;
  }
  bind(library, "nvrtcGetErrorString", api.error_string, api.unavailable);
  bind(library, "nvrtcCreateProgram", api.create_program, api.unavailable);
  bind(library, "nvrtcDestroyProgram", api.destroy_program, api.unavailable);
  bind(library, "nvrtcCompileProgram", api.compile_program, api.unavailable);
  bind(library, "nvrtcGetProgramLogSize", api.log_size, api.unavailable);
  bind(library, "nvrtcGetProgramLog", api.log, api.unavailable);
  bind(library, "nvrtcGetPTXSize", api.ptx_size, api.unavailable);
  bind(library, "nvrtcGetPTX", api.ptx, api.unavailable);
  bind(library, "nvrtcGetCUBINSize", api.cubin_size, api.unavailable);
  bind(library, "nvrtcGetCUBIN", api.cubin, api.unavailable);
  return api;
}

const Nvrtc& nvrtc() {
  static const Nvrtc api = load_nvrtc();
  return api;
}

// NVRTC's sizes count a terminating NUL; the strings here do not.
std::string without_trailing_nuls(std::string s) {
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

// One NVRTC program, destroyed with this.
class Program {
 public:
  Program(const std::string& source, const std::string& what) {
    NvrtcResult r = nvrtc().create_program(&program_, source.c_str(), what.c_str(), 0, nullptr, nullptr);
    if (r != kNvrtcSuccess) throw Error("compile_cuda(" + what + "): nvrtcCreateProgram: " + nvrtc().error_string(r));
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program() {
    if (program_ != nullptr) nvrtc().destroy_program(&program_);
  }

  NvrtcResult compile(const std::vector<std::string>& options) {
    std::vector<const char*> argv;
    for (const auto& option : options) argv.push_back(option.c_str());
    return nvrtc().compile_program(program_, static_cast<int>(argv.size()), argv.data());
  }
  std::string log() const { return without_trailing_nuls(get(nvrtc().log_size, nvrtc().log)); }
  std::string ptx() const { return without_trailing_nuls(get(nvrtc().ptx_size, nvrtc().ptx)); }
  std::string cubin() const { return get(nvrtc().cubin_size, nvrtc().cubin); }  // binary: kept whole

 private:
  // An output of the program, "" when NVRTC has none (e.g. no cubin for compute_NN).
  std::string get(NvrtcResult (*size_of)(NvrtcProgram, size_t*), NvrtcResult (*fill)(NvrtcProgram, char*)) const {
    size_t size = 0;
    if (size_of(program_, &size) != kNvrtcSuccess || size == 0) return "";
    std::string bytes(size, '\0');
    if (fill(program_, bytes.data()) != kNvrtcSuccess) return "";
    return bytes;
  }

  NvrtcProgram program_ = nullptr;
};

// The number written just before `unit` in `line` ("17" for " registers" in
// "Used 17 registers"), 0 when `unit` is absent.
int number_before(std::string_view line, std::string_view unit) {
  size_t end = line.find(unit);
  if (end == std::string_view::npos) return 0;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  if (begin == end) return 0;
  return std::atoi(std::string(line.substr(begin, end - begin)).c_str());
}

}  // namespace

std::string nvrtc_unavailable_reason() { return nvrtc().unavailable; }

std::vector<CudaKernelResources> parse_ptxas_report(const std::string& log) {
  // ptxas reports, per entry: "Compiling entry function 'NAME' for 'sm_NN'",
  // "Function properties for NAME" followed by the stack/spill line, then
  // "Used N registers, ..., N bytes smem, ...". Non-inlined device functions
  // get "Function properties" too; those are not kernels and are dropped.
  struct Frame {
    int stack = 0, spill_stores = 0, spill_loads = 0;
  };
  std::vector<CudaKernelResources> kernels;
  std::map<std::string, Frame> frames;
  std::string properties_of;  // the function the next stack/spill line is for
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    constexpr std::string_view kEntry = "Compiling entry function '";
    constexpr std::string_view kProperties = "Function properties for ";
    if (size_t at = line.find(kEntry); at != std::string::npos) {
      size_t begin = at + kEntry.size();
      size_t end = line.find('\'', begin);
      kernels.push_back({});
      kernels.back().name = line.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
      properties_of.clear();
    } else if (size_t at = line.find(kProperties); at != std::string::npos) {
      properties_of = line.substr(at + kProperties.size());
      while (!properties_of.empty() && std::isspace(static_cast<unsigned char>(properties_of.back()))) {
        properties_of.pop_back();
      }
    } else if (line.find("bytes stack frame") != std::string::npos && !properties_of.empty()) {
      frames[properties_of] = {number_before(line, "bytes stack frame"), number_before(line, "bytes spill stores"),
                               number_before(line, "bytes spill loads")};
      properties_of.clear();
    } else if (line.find("Used ") != std::string::npos && line.find(" registers") != std::string::npos &&
               !kernels.empty()) {
      kernels.back().registers = number_before(line, "registers");
      kernels.back().shared_bytes = number_before(line, "bytes smem");
    }
  }
  for (auto& kernel : kernels) {
    if (auto it = frames.find(kernel.name); it != frames.end()) {
      kernel.stack_bytes = it->second.stack;
      kernel.spill_store_bytes = it->second.spill_stores;
      kernel.spill_load_bytes = it->second.spill_loads;
    }
  }
  return kernels;
}

namespace {

CudaBinary compile_here(const std::string& source, int arch, const std::string& what) {
  const std::string sm = "sm_" + std::to_string(arch);
  auto fail = [&](NvrtcResult r, const std::string& log) {
    throw Error("compile_cuda(" + what + "): " + nvrtc().error_string(r) + " compiling for " + sm + ":\n" +
                support::first_lines(log, 40));
  };
  CudaBinary binary;
  binary.arch = arch;
  {
    // -Xptxas -v makes ptxas write its per-kernel resource report into the
    // program log, where NVRTC 13 keeps it after a successful compile.
    Program program(source, what);
    NvrtcResult r = program.compile({"--gpu-architecture=" + sm, "--std=c++17", "--ptxas-options=-v"});
    binary.log = program.log();
    if (r != kNvrtcSuccess) fail(r, binary.log);
    binary.cubin = program.cubin();
    binary.ptx = program.ptx();
  }
  if (binary.ptx.empty()) {
    // NVRTC 13 hands out the PTX of an sm_NN compile; versions that keep it
    // only for virtual architectures get a second compile for compute_NN.
    Program program(source, what);
    NvrtcResult r = program.compile({"--gpu-architecture=compute_" + std::to_string(arch), "--std=c++17"});
    if (r != kNvrtcSuccess) fail(r, program.log());
    binary.ptx = program.ptx();
  }
  if (binary.cubin.empty()) throw Error("compile_cuda(" + what + "): NVRTC produced no cubin for " + sm);
  return binary;
}

// The child's answer is frames (support/fd_io.h): "ok" then the cubin, the
// PTX and the log; or "error" then its text.
std::string take(const std::string& answer, size_t& at) {
  std::optional<std::string> field = support::next_frame(answer, at);
  if (!field) throw Error("compile_cuda: a truncated answer from the compiling process");
  return std::move(*field);
}

// Long enough for the largest network's one module.
constexpr int kCompileTimeoutMs = 600000;

}  // namespace

CudaBinary compile_cuda(const std::string& source, int arch, const std::string& what) {
  if (std::string reason = nvrtc_unavailable_reason(); !reason.empty()) {
    throw Error("compile_cuda(" + what + "): NVRTC unavailable: " + reason);
  }
  // NVRTC carries the CUDA driver's cuInit and may initialise CUDA in the
  // process that compiles; CUDA does not survive fork (support/forked_probe.h),
  // so compiling here would leave a tuner unable to fork measurement children
  // that run on the GPU. It compiles in a forked child instead.
  const support::ProbeAnswer a = support::ask_in_forked_child(
      [&] {
        try {
          const CudaBinary b = compile_here(source, arch, what);
          return support::framed("ok") + support::framed(b.cubin) + support::framed(b.ptx) + support::framed(b.log);
        } catch (const std::exception& e) {
          return support::framed("error") + support::framed(e.what());
        }
      },
      "NVRTC to compile " + what, kCompileTimeoutMs);
  if (!a.answered) throw Error("compile_cuda(" + what + "): " + a.text);
  size_t at = 0;
  if (take(a.text, at) == "error") throw Error(take(a.text, at));
  CudaBinary binary;
  binary.arch = arch;
  binary.cubin = take(a.text, at);
  binary.ptx = take(a.text, at);
  binary.log = take(a.text, at);
  binary.kernels = parse_ptxas_report(binary.log);
  return binary;
}

}  // namespace tessera::codegen
