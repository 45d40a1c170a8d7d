// The cores' fp32 FMA peak, measured: the denominator of "fraction of peak".
//
//   build/peak_flops [--threads 1,2] [--seconds 0.5]
//
// Each thread runs chains of independent fused multiply-adds on the widest
// vectors the host has (AVX-512, else AVX2 + FMA, else SSE multiply + add),
// enough chains to cover the FMA latency of every pipe. GFLOPS = 2 x lanes x
// FMAs / wall time of the slowest thread, best of several rounds (a noisy
// neighbour only ever slows a round down).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kChains = 12;  // >= latency (4) x pipes (2), with room
constexpr long kStepsPerCall = 1 << 16;

struct Kernel {
  const char* name;
  int lanes;
  float (*run)(long calls);  // returns a value that depends on every chain
};

// One step of every chain, unrolled so that the chains live in registers.
#define TESSERA_EVERY_CHAIN(statement) \
  _Pragma("GCC unroll 16") for (int c = 0; c < kChains; ++c) statement

// The chains on vectors of `Lanes` floats; `acc * a + b` becomes one fused
// multiply-add where the caller's target has FMA (-ffp-contract=fast). Inlined
// into each caller, it takes that caller's instruction set.
template <int Lanes>
struct FloatVector;  // GCC's vector extension: arithmetic lane by lane
template <>
struct FloatVector<16> {
  typedef float type __attribute__((vector_size(64)));
};
template <>
struct FloatVector<8> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct FloatVector<4> {
  typedef float type __attribute__((vector_size(16)));
};

template <int Lanes>
[[gnu::always_inline]] inline float multiply_add_chains(long calls) {
  using V = typename FloatVector<Lanes>::type;
  V acc[kChains];
  TESSERA_EVERY_CHAIN(acc[c] = V{} + 0.001f * static_cast<float>(c));
  const V a = V{} + 0.999999f, b = V{} + 1e-7f;
  for (long i = 0; i < calls * kStepsPerCall; ++i) {
    TESSERA_EVERY_CHAIN(acc[c] = acc[c] * a + b);
  }
  V sum = V{};
  TESSERA_EVERY_CHAIN(sum += acc[c]);
  float total = 0;
  for (int i = 0; i < Lanes; ++i) total += sum[i];
  return total;
}

__attribute__((target("avx512f"))) float fma_avx512(long calls) { return multiply_add_chains<16>(calls); }
__attribute__((target("avx2,fma"))) float fma_avx2(long calls) { return multiply_add_chains<8>(calls); }
float mul_add_sse(long calls) { return multiply_add_chains<4>(calls); }  // no FMA: a multiply and an add

Kernel host_kernel() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"avx512", 16, fma_avx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {"avx2+fma", 8, fma_avx2};
  return {"sse", 4, mul_add_sse};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// GFLOPS of `threads` threads running `calls` calls each, all started together.
double measure(const Kernel& k, int threads, long calls) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> took(threads);
  std::vector<float> sink(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) {
      }
      const auto start = std::chrono::steady_clock::now();
      sink[t] = k.run(calls);
      took[t] = seconds_since(start);
    });
  while (ready.load() < threads) {
  }
  go.store(true);
  for (auto& th : pool) th.join();
  volatile float keep = sink[0];
  (void)keep;
  const double flop = 2.0 * k.lanes * kChains * static_cast<double>(kStepsPerCall) * calls * threads;
  return flop / *std::max_element(took.begin(), took.end()) / 1e9;
}

std::vector<int> parse_threads(const char* text) {
  std::vector<int> out;
  for (const char* p = text; *p;) {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p || v < 1) {
      std::fprintf(stderr, "peak_flops: --threads '%s': a comma-separated list of positive counts\n", text);
      std::exit(2);
    }
    out.push_back(static_cast<int>(v));
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> thread_counts = {1, 2};
  double seconds = 0.5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
      thread_counts = parse_threads(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: peak_flops [--threads 1,2] [--seconds 0.5]\n");
      return 2;
    }
  }
  const Kernel k = host_kernel();
  // Calibrate: calls per thread for about `seconds` of work.
  const auto start = std::chrono::steady_clock::now();
  k.run(1);
  const long calls = std::max(1L, static_cast<long>(seconds / std::max(1e-6, seconds_since(start))));
  std::printf("fp32 %s (%d lanes), %d chains per thread, best of 7 rounds of %.2f s\n", k.name, k.lanes, kChains,
              seconds);
  for (int threads : thread_counts) {
    double best = 0;
    for (int round = 0; round < 7; ++round) best = std::max(best, measure(k, threads, calls));
    std::printf("threads %d: peak %.1f GFLOPS (%.1f per thread)\n", threads, best, best / threads);
  }
  return 0;
}
