// The block that holds a model's weights and activations: aligned to a huge
// page, zero-filled, writable over its whole size, and owned by exactly one
// buffer through moves.
#include "runtime/huge_page_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>

namespace tessera::runtime {
namespace {

TEST(HugePageBuffer, IsHugePageAlignedZeroFilledAndWritable) {
  const size_t bytes = (size_t{5} << 20) + 123;  // not a whole number of huge pages
  HugePageBuffer buffer(bytes, "test buffer");
  ASSERT_NE(buffer.data(), nullptr);
  EXPECT_EQ(buffer.size(), bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % (size_t{2} << 20), 0u);
  for (size_t i = 0; i < bytes; i += 4096) ASSERT_EQ(buffer.data()[i], 0) << i;
  EXPECT_EQ(buffer.data()[bytes - 1], 0);
  std::memset(buffer.data(), 7, bytes);
  EXPECT_EQ(buffer.data()[bytes - 1], 7);
}

TEST(HugePageBuffer, MovesHandOverTheMemory) {
  HugePageBuffer a(1000, "a");
  char* data = a.data();
  data[999] = 3;
  HugePageBuffer b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(b.data()[999], 3);
  HugePageBuffer c(10, "c");
  c = std::move(b);  // c's own block is released, b's taken over
  EXPECT_EQ(c.data(), data);
  EXPECT_EQ(c.size(), 1000u);
  HugePageBuffer empty;
  EXPECT_EQ(empty.data(), nullptr);
}

}  // namespace
}  // namespace tessera::runtime
