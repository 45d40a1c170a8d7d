#include "runtime/ndarray.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace tessera::runtime {
namespace {

TEST(RuntimeNDArray, IsZeroFilledAndAligned) {
  NDArray a({3, 5, 7});
  EXPECT_EQ(a.size(), 105);
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{3, 5, 7}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u);
  for (int64_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], 0.0f);
}

TEST(RuntimeNDArray, RandomFillIsReproducibleAndInRange) {
  NDArray a({1000}), b({1000}), c({1000});
  a.fill_random(7, -2.f, 3.f);
  b.fill_random(7, -2.f, 3.f);
  c.fill_random(8, -2.f, 3.f);
  bool differs = false;
  for (int64_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i], b[i]);
    ASSERT_GE(a[i], -2.f);
    ASSERT_LT(a[i], 3.f);
    differs = differs || a[i] != c[i];
  }
  EXPECT_TRUE(differs);
}

TEST(RuntimeNDArray, MovesWithoutCopying) {
  NDArray a({4});
  float* data = a.data();
  NDArray b = std::move(a);
  EXPECT_EQ(b.data(), data);
}

}  // namespace
}  // namespace tessera::runtime
