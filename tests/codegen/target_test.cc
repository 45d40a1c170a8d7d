#include "codegen/target.h"

#include <gtest/gtest.h>

#include "tessera/error.h"

namespace tessera::codegen {
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
  for (const char* text : {"llvm -mcpu=znver3", "llvm -mcpu=x86-64 -mattr=+avx2,+fma", "cuda"}) {
    EXPECT_EQ(Target::parse(text).str(), text);
    EXPECT_EQ(Target::parse(Target::parse(text).str()).str(), text);
  }
}

TEST(CodegenTarget, MalformedTextIsAnError) {
  EXPECT_THROW(Target::parse("opencl"), Error);
  EXPECT_THROW(Target::parse("llvm -mfoo=bar"), Error);
  EXPECT_THROW(Target::parse(""), Error);
}

}  // namespace
}  // namespace tessera::codegen
