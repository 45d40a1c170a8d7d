#include <gtest/gtest.h>

#include <vector>

#include "measure/timer.h"

namespace tessera::measure {
namespace {

TEST(MeasureTimer, RunsWarmupThenNumberTimesRepeat) {
  int calls = 0;
  auto costs = time_function([&] { ++calls; }, {.number = 4, .repeat = 3});
  EXPECT_EQ(costs.size(), 3u);
  EXPECT_EQ(calls, 1 + 4 * 3);
}

TEST(MeasureTimer, ZeroRepeatOnlyWarmsUp) {
  int calls = 0;
  auto costs = time_function([&] { ++calls; }, {.number = 5, .repeat = 0});
  EXPECT_TRUE(costs.empty());
  EXPECT_EQ(calls, 1);
}

TEST(MeasureTimer, MinRepeatMsGrowsNumber) {
  // A call of a few nanoseconds cannot fill 5 ms, so `number` must grow (at
  // least doubling each time), and every kept measurement uses the grown number.
  int calls = 0;
  auto costs = time_function([&] { ++calls; }, {.number = 1, .repeat = 2, .min_repeat_ms = 5});
  EXPECT_EQ(costs.size(), 2u);
  EXPECT_GT(calls, 1 + 2 * 2);
}

TEST(MeasureTimer, CacheFlushKeepsTheNumberOfRuns) {
  std::vector<float> a(10000, 1.f), b(333, 2.f);
  FlushList flush{{a.data(), a.size() * sizeof(float)}, {b.data() + 1, 17}, {nullptr, 0}};
  int calls = 0;
  auto costs = time_function([&] { ++calls; },
                             {.number = 3, .repeat = 2, .enable_cpu_cache_flush = true}, flush);
  EXPECT_EQ(costs.size(), 2u);
  EXPECT_EQ(calls, 1 + 3 * 2);
  EXPECT_EQ(a[9999], 1.f);  // flushing evicts, it never changes memory
}

}  // namespace
}  // namespace tessera::measure
