#pragma once
// CUDA C compiled to cubin and PTX through NVRTC, loaded with dlopen at first
// use: a binary linked with this starts (and merely reports NVRTC missing) on a
// machine without the CUDA toolkit. Compiling needs no GPU.
#include <string>
#include <vector>

namespace tessera::codegen {

// Why NVRTC cannot be used here (e.g. "libnvrtc.so.13 not found ..."), or ""
// when it can.
std::string nvrtc_unavailable_reason();

// One kernel's resources as ptxas reports them for the compiled architecture.
struct CudaKernelResources {
  std::string name;  // the entry's symbol (unmangled for extern "C" kernels)
  int registers = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int shared_bytes = 0;  // static __shared__ memory
  int stack_bytes = 0;   // the entry's own stack frame
};

struct CudaBinary {
  int arch = 80;                             // sm_NN
  std::string cubin;                         // ELF for sm_<arch>
  std::string ptx;                           // PTX with .target sm_<arch>
  std::string log;                           // the compiler's log (ptxas's verbose report included)
  std::vector<CudaKernelResources> kernels;  // in the order ptxas compiled them
};

// Compiles CUDA C `source` for sm_<arch>. `what` names the source in errors.
// Throws tessera::Error (naming `what`, with the first lines of the log) when
// NVRTC is unavailable or the compilation fails. The source cannot include
// host headers: NVRTC has none.
CudaBinary compile_cuda(const std::string& source, int arch, const std::string& what);

// The kernels in a ptxas verbose report (`-Xptxas -v`); exposed for tests.
std::vector<CudaKernelResources> parse_ptxas_report(const std::string& log);

}  // namespace tessera::codegen
