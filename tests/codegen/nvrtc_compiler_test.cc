// CUDA C compiled by NVRTC (no GPU needed): a cubin, PTX for the requested
// architecture, and each kernel's resources from ptxas's report; compile
// errors name the source and carry the compiler's log.
#include "codegen/nvrtc_compiler.h"

#include <gtest/gtest.h>

#include <string>

#include "tessera/error.h"

namespace tessera::codegen {
namespace {

// A kernel with 1 KiB of static shared memory and a loop over it. NVRTC has no
// host headers, so the source includes nothing.
const char* const kTiledSource = R"(
extern "C" __global__ void tiled_sum(float* out, const float* in, int n) {
  __shared__ float tile[256];
  int t = threadIdx.x;
  tile[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) acc += tile[(t + i) & 255] * (float)i;
  out[blockIdx.x * 256 + t] = acc;
}
)";

#define SKIP_WITHOUT_NVRTC()                                                \
  do {                                                                      \
    if (std::string reason = nvrtc_unavailable_reason(); !reason.empty()) { \
      GTEST_SKIP() << reason;                                               \
    }                                                                       \
  } while (0)

void expect_tiled_binary(int arch) {
  SCOPED_TRACE("sm_" + std::to_string(arch));
  CudaBinary binary = compile_cuda(kTiledSource, arch, "tiled_sum.cu");
  EXPECT_EQ(binary.arch, arch);
  ASSERT_GE(binary.cubin.size(), 4u);
  EXPECT_EQ(binary.cubin.substr(0, 4), std::string("\x7f"
                                                   "ELF"));
  EXPECT_NE(binary.ptx.find(".target sm_" + std::to_string(arch)), std::string::npos) << binary.ptx;
  EXPECT_NE(binary.ptx.find(".entry tiled_sum"), std::string::npos) << binary.ptx;
  ASSERT_EQ(binary.kernels.size(), 1u) << binary.log;
  const CudaKernelResources& kernel = binary.kernels[0];
  EXPECT_EQ(kernel.name, "tiled_sum");
  EXPECT_GT(kernel.registers, 0) << binary.log;
  EXPECT_EQ(kernel.shared_bytes, 1024) << binary.log;
  EXPECT_EQ(kernel.spill_store_bytes, 0);
  EXPECT_EQ(kernel.spill_load_bytes, 0);
}

TEST(NvrtcCompiler, CompilesSharedMemoryKernelForAmpereAndHopper) {
  SKIP_WITHOUT_NVRTC();
  expect_tiled_binary(80);
  expect_tiled_binary(90);
}

TEST(NvrtcCompiler, CompilesForTuring) {
  SKIP_WITHOUT_NVRTC();
  expect_tiled_binary(75);
}

TEST(NvrtcCompiler, SyntaxErrorThrowsNamingTheSourceWithTheLog) {
  SKIP_WITHOUT_NVRTC();
  const std::string bad = "extern \"C\" __global__ void broken(float* p) { p[0] = undeclared_thing; }\n";
  try {
    compile_cuda(bad, 80, "broken_kernel.cu");
    FAIL() << "expected tessera::Error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("broken_kernel.cu"), std::string::npos) << message;
    EXPECT_NE(message.find("undeclared_thing"), std::string::npos) << message;
  }
}

TEST(NvrtcCompiler, ReportsEachKernelsOwnResourcesNotDeviceFunctions) {
  SKIP_WITHOUT_NVRTC();
  // `spilly` keeps a local array indexed at run time (stack); `plain` does
  // not; the non-inlined helper appears in ptxas's report but is no kernel.
  const std::string source = R"(
__device__ __noinline__ float helper(const float* p, int n) { return p[n] * 2.0f; }
extern "C" __global__ void plain(float* out) { out[threadIdx.x] = helper(out, 1); }
extern "C" __global__ void spilly(float* out, int n) {
  float a[64];
  for (int i = 0; i < 64; ++i) a[i] = out[i * n];
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += a[(i * 7) & 63];
  out[threadIdx.x] = s;
}
)";
  CudaBinary binary = compile_cuda(source, 80, "two_kernels.cu");
  ASSERT_EQ(binary.kernels.size(), 2u) << binary.log;
  for (const auto& kernel : binary.kernels) {
    EXPECT_TRUE(kernel.name == "plain" || kernel.name == "spilly") << kernel.name;
    EXPECT_GT(kernel.registers, 0) << kernel.name;
    EXPECT_EQ(kernel.shared_bytes, 0) << kernel.name;
    const int stack = kernel.name == "spilly" ? 256 : 0;  // 64 floats in local memory
    EXPECT_EQ(kernel.stack_bytes, stack) << kernel.name << "\n" << binary.log;
  }
}

TEST(NvrtcCompiler, ParsesPtxasReport) {
  // No NVRTC needed: the report's format as ptxas (CUDA 13) writes it.
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
      "ptxas info    : Function properties for k\n"
      "ptxas         .     48 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem, 372 bytes cmem[0]\n"
      "ptxas info    : Compile time = 5.413 ms\n"
      "ptxas info    : Function properties for _Z6helperPfi\n"
      "ptxas         .     64 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
  auto kernels = parse_ptxas_report(log);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].name, "k");
  EXPECT_EQ(kernels[0].registers, 255);
  EXPECT_EQ(kernels[0].shared_bytes, 4096);
  EXPECT_EQ(kernels[0].stack_bytes, 48);
  EXPECT_EQ(kernels[0].spill_store_bytes, 12);
  EXPECT_EQ(kernels[0].spill_load_bytes, 8);
}

TEST(NvrtcCompiler, UnsupportedArchitectureThrows) {
  SKIP_WITHOUT_NVRTC();
  // CUDA 13 dropped offline compilation for Pascal and older.
  EXPECT_THROW(compile_cuda(kTiledSource, 61, "tiled_sum.cu"), Error);
}

}  // namespace
}  // namespace tessera::codegen
