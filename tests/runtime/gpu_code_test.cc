// A GPU build as one file (what a measured candidate's builder writes and
// its runner's child reads): it reads back whole, and a damaged one is an
// error naming it, never a crash.
#include "runtime/gpu_code.h"

#include <gtest/gtest.h>

#include "tessera/error.h"

namespace tessera::runtime {
namespace {

GpuCode sample() {
  GpuCode c;
  c.dialect = "cuda";
  c.arch = 90;
  c.source = "extern \"C\" __global__ void k0(float* a) {}";
  c.cubin = std::string("\x7f" "ELF\0\1\2", 7);
  c.ptx = ".version 8.0";
  c.kernels["kernel"] = GpuKernel{{128}, {GpuLaunch{"k0", {4, 2, 1}, {16, 16, 1}, {0, 2}}}};
  return c;
}

TEST(GpuCode, SerializedCodeReadsBackWhole) {
  const GpuCode c = sample();
  const std::string bytes = c.serialize();
  ASSERT_TRUE(is_gpu_code(bytes));
  const GpuCode back = GpuCode::deserialize(bytes, "cand0.gpu");
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_EQ(back.cubin, c.cubin);
  EXPECT_EQ(back.ptx, c.ptx);
  EXPECT_EQ(back.kernels.at("kernel").launches[0].grid, (std::array<int64_t, 3>{4, 2, 1}));
}

TEST(GpuCode, DamagedCodeIsAnErrorNamingIt) {
  const std::string bytes = sample().serialize();
  auto message = [](const std::string& b) {
    try {
      GpuCode::deserialize(b, "cand7.gpu");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(bytes.substr(0, bytes.size() - 3)).find("cand7.gpu: truncated GPU code"), std::string::npos);
  EXPECT_NE(message("ELF....").find("cand7.gpu: not GPU code"), std::string::npos);
  std::string bad_dialect = sample().serialize();
  bad_dialect.replace(bad_dialect.find("\"cuda\""), 6, "\"rocm\"");
  EXPECT_NE(message(bad_dialect).find("unknown GPU dialect 'rocm'"), std::string::npos);
  GpuCode huge_block = sample();
  huge_block.kernels["kernel"].launches[0].block = {2048, 1, 1};
  EXPECT_NE(message(huge_block.serialize()).find("a block of no GPU"), std::string::npos);
}

}  // namespace
}  // namespace tessera::runtime
