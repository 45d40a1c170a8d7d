#include "report/machine_peak.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

namespace tessera::report {

namespace {

// Twelve independent accumulators hide the FMA latency (4 cycles, 2 ports);
// the instructions are written out so that no compiler flag or
// auto-vectorizer decides what is measured.
#if defined(__x86_64__)
#define TESSERA_FMA_BLOCK(reg)                                                                          \
  "vfmadd231ps %%" reg "14, %%" reg "15, %%" reg "0\n vfmadd231ps %%" reg "14, %%" reg "15, %%" reg     \
  "1\n vfmadd231ps %%" reg "14, %%" reg "15, %%" reg "2\n vfmadd231ps %%" reg "14, %%" reg "15, %%" reg \
  "3\n vfmadd231ps %%" reg "14, %%" reg "15, %%" reg "4\n vfmadd231ps %%" reg "14, %%" reg "15, %%" reg \
  "5\n vfmadd231ps %%" reg "14, %%" reg "15, %%" reg "6\n vfmadd231ps %%" reg "14, %%" reg "15, %%" reg \
  "7\n vfmadd231ps %%" reg "14, %%" reg "15, %%" reg "8\n vfmadd231ps %%" reg "14, %%" reg "15, %%" reg \
  "9\n vfmadd231ps %%" reg "14, %%" reg "15, %%" reg "10\n vfmadd231ps %%" reg "14, %%" reg "15, %%" reg "11\n"

void fma_loop(int64_t iterations, int bits) {
  if (bits >= 512)
    __asm__ volatile(
        "vpxord %%zmm14, %%zmm14, %%zmm14\n vpxord %%zmm15, %%zmm15, %%zmm15\n"
        "1:\n" TESSERA_FMA_BLOCK("zmm") "dec %0\n jnz 1b\n vzeroupper\n"
        : "+r"(iterations)
        :
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm14",
          "xmm15", "cc");
  else if (bits >= 256)
    __asm__ volatile(
        "vxorps %%ymm14, %%ymm14, %%ymm14\n vxorps %%ymm15, %%ymm15, %%ymm15\n"
        "1:\n" TESSERA_FMA_BLOCK("ymm") "dec %0\n jnz 1b\n vzeroupper\n"
        : "+r"(iterations)
        :
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm14",
          "xmm15", "cc");
  else
    __asm__ volatile(
        "xorps %%xmm14, %%xmm14\n xorps %%xmm15, %%xmm15\n"
        "1:\n mulps %%xmm14, %%xmm0\n addps %%xmm15, %%xmm1\n mulps %%xmm14, %%xmm2\n addps %%xmm15, %%xmm3\n"
        " mulps %%xmm14, %%xmm4\n addps %%xmm15, %%xmm5\n mulps %%xmm14, %%xmm6\n addps %%xmm15, %%xmm7\n"
        " mulps %%xmm14, %%xmm8\n addps %%xmm15, %%xmm9\n mulps %%xmm14, %%xmm10\n addps %%xmm15, %%xmm11\n"
        "dec %0\n jnz 1b\n"
        : "+r"(iterations)
        :
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm14",
          "xmm15", "cc");
}

// Reads `bytes` (a multiple of 128) with 32-byte loads, four cache lines an iteration.
void read_loop(const char* p, int64_t bytes) {
  const char* end = p + bytes;
  __asm__ volatile(
      "1:\n vmovups (%0), %%ymm0\n vmovups 32(%0), %%ymm1\n vmovups 64(%0), %%ymm2\n vmovups 96(%0), %%ymm3\n"
      " add $128, %0\n cmp %1, %0\n jb 1b\n vzeroupper\n"
      : "+r"(p)
      : "r"(end)
      : "xmm0", "xmm1", "xmm2", "xmm3", "cc", "memory");
}
#else
void fma_loop(int64_t, int) {}
void read_loop(const char*, int64_t) {}
#endif

int host_vector_bits() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return 512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 256;
  return 128;
#else
  return 0;
#endif
}

// The fastest of `rounds` runs of `work` on `threads` threads at once, in seconds.
template <typename Work>
double fastest_parallel(int threads, int rounds, Work work) {
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back([&, t] { work(t); });
    work(0);
    for (auto& th : pool) th.join();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

MachinePeak measure_machine_peak(int vector_bits, int threads) {
  MachinePeak peak;
  peak.threads = std::max(1, threads);
  peak.vector_bits = std::min(vector_bits > 0 ? vector_bits : 512, host_vector_bits());
  if (peak.vector_bits == 0) return peak;
  constexpr int64_t kIterations = 4'000'000;  // 48 M FMAs a thread: ~10 ms at a few GHz
  const double fma_seconds = fastest_parallel(peak.threads, 10, [&](int) { fma_loop(kIterations, peak.vector_bits); });
  // 12 instructions an iteration; the SSE loop's mulps / addps count one flop a lane, an FMA two.
  const double flop_per_instruction = peak.vector_bits == 128 ? 4.0 : peak.vector_bits / 32 * 2.0;
  peak.gflops = peak.threads * kIterations * 12 * flop_per_instruction / fma_seconds / 1e9;

  // 256 MiB in all, far past the last-level cache of any CPU we target,
  // each thread reading its own slice.
  const int64_t slice = ((int64_t{256} << 20) / peak.threads) / 4096 * 4096;
  char* buffer = static_cast<char*>(std::aligned_alloc(4096, slice * peak.threads));
  if (buffer == nullptr) return peak;
  for (int64_t i = 0; i < slice * peak.threads; i += 4096) buffer[i] = 1;  // fault the pages in before timing
  const double read_seconds = fastest_parallel(peak.threads, 3, [&](int t) { read_loop(buffer + t * slice, slice); });
  std::free(buffer);
  peak.gbytes_per_second = double(slice) * peak.threads / read_seconds / 1e9;
  return peak;
}

}  // namespace tessera::report
