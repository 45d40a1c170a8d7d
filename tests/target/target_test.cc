#include "target/target.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tessera/error.h"

namespace tessera::target {
namespace {

TEST(CodegenTarget, HostIsDetected) {
  Target host = Target::host();
  EXPECT_EQ(host.kind, "llvm");
  EXPECT_FALSE(host.cpu.empty());
  EXPECT_TRUE(host.vector_bits == 128 || host.vector_bits == 256 || host.vector_bits == 512);
  EXPECT_EQ(Target::parse("llvm").str(), host.str());
}

TEST(CodegenTarget, CpuImpliesVectorWidth) {
  Target zen3 = Target::parse("llvm -mcpu=znver3");
  EXPECT_EQ(zen3.cpu, "znver3");
  EXPECT_EQ(zen3.vector_bits, 256);
  EXPECT_EQ(Target::parse("llvm -mcpu=skylake-avx512").vector_bits, 512);
  EXPECT_EQ(Target::parse("llvm -mcpu=x86-64 -mattr=+avx2,+fma").vector_bits, 256);
  EXPECT_EQ(Target::parse("llvm -mcpu=x86-64").vector_bits, 128);
}

TEST(CodegenTarget, TextRoundTrips) {
  for (const char* text : {"llvm -mcpu=znver3", "llvm -mcpu=x86-64 -mattr=+avx2,+fma", "cuda -arch=sm_90",
                           "cuda -arch=sm_80 -max_threads_per_block=256 -max_shared_memory_per_block=98304"}) {
    EXPECT_EQ(Target::parse(text).str(), text);
    EXPECT_EQ(Target::parse(Target::parse(text).str()).str(), text);
  }
  EXPECT_EQ(Target::parse("cuda").str(), "cuda -arch=sm_80") << "the arch is always stated: records carry it";
  EXPECT_EQ(Target::parse("opencl -max_threads_per_block=256").str(), "opencl -max_threads_per_block=256");
  EXPECT_EQ(Target::parse("opencl").match_key(), "opencl");
  EXPECT_TRUE(Target::parse("opencl").is_gpu());
}

TEST(CodegenTarget, MalformedTextIsAnError) {
  EXPECT_THROW(Target::parse("rocm"), Error);
  EXPECT_THROW(Target::parse("opencl -arch=sm_80"), Error) << "an arch is CUDA's";
  EXPECT_THROW(Target::parse("llvm -mfoo=bar"), Error);
  EXPECT_THROW(Target::parse(""), Error);
}

// Named by CPU, so that no test depends on the host's ISA.
const char* const kAvx2 = "llvm -mcpu=haswell";
const char* const kAvx512 = "llvm -mcpu=skylake-avx512";

std::string error_of(const std::string& text) {
  try {
    Target::parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(CodegenTarget, ThreadsRoundTripAndAreLeftOutWhenNotStated) {
  for (const char* text : {"llvm -mcpu=znver3 -threads=2", "llvm -mcpu=x86-64 -mattr=+avx2,+fma -threads=16"}) {
    EXPECT_EQ(Target::parse(text).str(), text);
  }
  EXPECT_EQ(Target::parse("llvm -mcpu=znver3 -threads=2").threads, 2);
  EXPECT_EQ(Target::parse("llvm -threads=3 -mcpu=znver3").str(), "llvm -mcpu=znver3 -threads=3");
  EXPECT_EQ(Target::parse("llvm -mcpu=znver3").threads, 0);
  EXPECT_EQ(Target::parse("llvm -threads=1").threads, 1);  // the host, on one thread
}

// The GPU's limits are data: sm_80's when no device is asked, narrowed by
// options; what no arch CUDA 13 compiles for, or no block can hold, is an
// error naming the target.
TEST(CodegenTarget, CudaLimitsAreDataAndImpossibleOnesAreNamed) {
  const Target plain = Target::parse("cuda");
  EXPECT_EQ(plain.kind, "cuda");
  EXPECT_EQ(plain.gpu.arch, 80);
  EXPECT_EQ(plain.gpu.max_threads_per_block, 1024);
  EXPECT_EQ(plain.gpu.max_shared_memory_per_block, 48 * 1024);
  EXPECT_EQ(plain.gpu.warp_size, 32);
  const Target h100 = Target::parse("cuda -max_shared_memory_per_block=65536 -arch=sm_90 -max_threads_per_block=512");
  EXPECT_EQ(h100.gpu.arch, 90);
  EXPECT_EQ(h100.gpu.arch_name(), "sm_90");
  EXPECT_EQ(h100.gpu.max_threads_per_block, 512);
  EXPECT_EQ(h100.gpu.max_shared_memory_per_block, 65536);
  for (const char* text : {"cuda -arch=sm_70", "cuda -arch=90", "cuda -arch=sm_9x", "cuda -arch=",
                           "cuda -max_threads_per_block=1000", "cuda -max_threads_per_block=2048",
                           "cuda -max_threads_per_block=0", "cuda -max_shared_memory_per_block=-1",
                           "cuda -max_shared_memory_per_block=1000000", "cuda -threads=2", "cuda -mcpu=znver3"})
    EXPECT_EQ(error_of(text).rfind(std::string("target '") + text + "': ", 0), 0u) << error_of(text);
  EXPECT_NE(error_of("cuda -arch=sm_70").find("sm_75 or newer"), std::string::npos);
  // TF32 is a choice of the user's (fp32 products on tensor cores), stated
  // in the target, which records carry; sm_75's tensor cores take none.
  const Target tf32 = Target::parse("cuda -tf32 -arch=sm_90");
  EXPECT_TRUE(tf32.tf32);
  EXPECT_FALSE(h100.tf32);
  EXPECT_EQ(tf32.str(), "cuda -arch=sm_90 -tf32");
  EXPECT_EQ(Target::parse(tf32.str()).str(), tf32.str());
  EXPECT_NE(error_of("cuda -arch=sm_75 -tf32").find("sm_80 or newer"), std::string::npos)
      << error_of("cuda -arch=sm_75 -tf32");
  EXPECT_EQ(error_of("opencl -tf32").rfind("target 'opencl -tf32': unknown option '-tf32'", 0), 0u);
  EXPECT_EQ(error_of("cuda -tf32=1").rfind("target 'cuda -tf32=1': unknown option", 0), 0u);
  EXPECT_NE(error_of("cuda -max_threads_per_block=1000").find("32-thread warps"), std::string::npos);
}

TEST(CodegenTarget, BadThreadCountOrCpuIsAnErrorNamingTheTarget) {
  for (const char* text : {"llvm -threads=0", "llvm -threads=-2", "llvm -threads=two",
                           "llvm -threads=", "llvm -threads=2x", "llvm -threads=99999999999"})
    EXPECT_NE(error_of(text).find(std::string("target '") + text + "'"), std::string::npos) << error_of(text);
  EXPECT_EQ(error_of("llvm -mcpu=znver9"), "target 'llvm -mcpu=znver9': unknown CPU 'znver9'");
  EXPECT_THROW(Target::parse("cuda -threads=2"), Error);
}

// LLVM alone only warns about an unknown feature and compiles without it.
TEST(CodegenTarget, AnUnknownOrMalformedFeatureIsAnErrorAndKnownOnesPass) {
  EXPECT_EQ(error_of("llvm -mattr=+foo"), "target 'llvm -mattr=+foo': unknown CPU feature 'foo'");
  EXPECT_EQ(error_of("llvm -mcpu=x86-64 -mattr=+avx2,-avx512fx"),
            "target 'llvm -mcpu=x86-64 -mattr=+avx2,-avx512fx': unknown CPU feature 'avx512fx'");
  EXPECT_EQ(error_of("llvm -mattr=avx2"), "target 'llvm -mattr=avx2': feature 'avx2' must be +name or -name");
  // Known ones, whether the baseline CPU has them (sse2) or not (avx512f), on or off,
  // ISA features and tuning ones.
  for (const char* text : {"llvm -mattr=-sse2", "llvm -mattr=+avx512f", "llvm -mattr=-avx512f",
                           "llvm -mcpu=x86-64 -mattr=+avx2,+fma,-prefer-256-bit", "llvm -mattr="})
    EXPECT_EQ(error_of(text), "no error") << text;
}

TEST(CodegenTarget, MatchKeyIsKindIsaWidthAndThreads) {
  EXPECT_EQ(Target::parse(std::string(kAvx2) + " -threads=2").match_key(), "llvm avx2 256-bit threads=2");
  EXPECT_EQ(Target::parse(kAvx512).match_key(), "llvm avx512 512-bit");
  EXPECT_EQ(Target::parse("cuda").match_key(), "cuda sm_80");
  EXPECT_EQ(Target::parse("cuda -arch=sm_90 -max_threads_per_block=512").match_key(),
            "cuda sm_90 max_threads_per_block=512");
  // Records tuned in TF32 are not fp32's.
  EXPECT_EQ(Target::parse("cuda -arch=sm_90 -tf32").match_key(), "cuda sm_90 tf32");
}

TEST(CodegenTarget, SameIsaWidthAndThreadsMatchWhateverTheCpuAndFeatureFlags) {
  const Target haswell = Target::parse(std::string(kAvx2) + " -threads=2");
  // Other CPU names and feature strings with the same vector unit.
  EXPECT_TRUE(same_code_target(Target::parse("llvm -mcpu=znver3 -threads=2"), haswell));
  EXPECT_TRUE(same_code_target(Target::parse("llvm -mcpu=x86-64 -mattr=+avx2,+fma,+bmi2 -threads=2"), haswell));
  EXPECT_TRUE(same_code_target(Target::parse("llvm -mcpu=haswell -mattr=-bmi2 -threads=2"), haswell));
}

TEST(CodegenTarget, OtherThreadsIsaOrWidthDoNotMatch) {
  const Target avx2 = Target::parse(std::string(kAvx2) + " -threads=2");
  EXPECT_FALSE(same_code_target(Target::parse(std::string(kAvx2) + " -threads=1"), avx2));
  EXPECT_FALSE(same_code_target(Target::parse(std::string(kAvx512) + " -threads=2"), avx2));
  EXPECT_FALSE(same_code_target(Target::parse("llvm -mcpu=sandybridge -threads=2"), avx2));  // AVX, no AVX2
  EXPECT_FALSE(same_code_target(Target::parse("llvm -mcpu=x86-64 -threads=2"), avx2));       // SSE, 128-bit
  EXPECT_FALSE(same_code_target(Target::parse("cuda"), avx2));
  EXPECT_FALSE(same_code_target(Target::parse("cuda -arch=sm_80"), Target::parse("cuda -arch=sm_90")));
}

TEST(CodegenTarget, AThreadCountNotStatedMatchesAny) {
  // Records written before targets carried -threads= state none.
  const Target two = Target::parse(std::string(kAvx2) + " -threads=2");
  EXPECT_TRUE(same_code_target(Target::parse(kAvx2), two));
  EXPECT_TRUE(same_code_target(two, Target::parse(kAvx2)));
  EXPECT_FALSE(same_code_target(Target::parse(kAvx512), two));
}

TEST(CodegenTarget, HostWithIsaCapsTheVectorUnit) {
  const Target host = Target::host();
  bool at_or_below_host = false;
  for (const char* isa : {"avx512", "avx2", "avx", "sse"}) {
    at_or_below_host = at_or_below_host || host.isa == isa;
    if (!at_or_below_host) {
      EXPECT_THROW(Target::host_with_isa(isa), Error) << isa;
      continue;
    }
    Target capped = Target::host_with_isa(isa);
    EXPECT_EQ(capped.isa, isa);
    EXPECT_EQ(capped.cpu, host.cpu);
    EXPECT_EQ(Target::parse(capped.str()).match_key(), capped.match_key());  // records read it back alike
    EXPECT_TRUE(capped.missing_on(host).empty()) << isa;
  }
  EXPECT_EQ(Target::host_with_isa(host.isa).str(), host.str());
  EXPECT_THROW(Target::host_with_isa("avx1024"), Error);
  // The same from a target's text: "llvm -isa=NAME".
  EXPECT_EQ(Target::parse("llvm -isa=" + host.isa + " -threads=3").str(),
            Target::host_with_isa(host.isa).str() + " -threads=3");
  EXPECT_THROW(Target::parse("llvm -isa=avx1024"), Error);
  EXPECT_THROW(Target::parse("llvm -mcpu=znver3 -isa=avx2"), Error);  // names features, or caps the host
}

// The byte dot product int8 kernels run on, from the CPU's features; capping
// an AVX-512 VNNI host at AVX2 leaves AVX-VNNI where the CPU has it.
TEST(CodegenTarget, ByteDotProductFollowsTheFeatures) {
  EXPECT_EQ(Target::parse("llvm -mcpu=sapphirerapids -mattr=-avx512f").byte_dot, "vnni");
  EXPECT_EQ(Target::parse("llvm -mcpu=sapphirerapids -mattr=-avx512f").byte_dot_bits, 256);
  EXPECT_EQ(Target::parse("llvm -mcpu=cascadelake").byte_dot_bits, 512);
  EXPECT_EQ(Target::parse("llvm -mcpu=znver3").byte_dot, "pmaddubsw");
  EXPECT_EQ(Target::parse("llvm -mcpu=znver4").byte_dot, "vnni");
  const std::vector<std::string> sets = Target::parse("llvm -mcpu=alderlake").instruction_sets();
  EXPECT_NE(std::find(sets.begin(), sets.end(), "avxvnni"), sets.end());
}

TEST(CodegenTarget, CappingAvx512ToAvx2LeavesSixteenYmmRegisters) {
  // As host_with_isa("avx2") does on an AVX-512 host.
  Target t = Target::parse(std::string(kAvx512) + " -mattr=-avx512f");
  EXPECT_EQ(t.isa, "avx2");
  EXPECT_EQ(t.vector_bits, 256);
  EXPECT_EQ(t.vector_registers, 16);
}

TEST(CodegenTarget, MissingOnNamesTheExtensionsAHostLacks) {
  const Target zen3 = Target::parse("llvm -mcpu=znver3");
  std::vector<std::string> missing = Target::parse(kAvx512).missing_on(zen3);
  EXPECT_NE(std::find(missing.begin(), missing.end(), "avx512f"), missing.end());
  EXPECT_TRUE(Target::parse(kAvx2).missing_on(zen3).empty());
  EXPECT_TRUE(Target::parse("llvm -mcpu=x86-64").missing_on(Target::parse(kAvx512)).empty());
  EXPECT_NO_THROW(require_runnable_here(Target::host()));
}

}  // namespace
}  // namespace tessera::target
