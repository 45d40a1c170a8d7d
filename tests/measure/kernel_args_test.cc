#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "measure/kernel_args.h"
#include "measure_test_util.h"

namespace tessera::measure {
namespace {

TEST(MeasureKernelArgs, InputsAreReproducibleAndDistinctOutputsZeroed) {
  auto dag = testing::add_dag();
  auto first = make_inputs(dag), second = make_inputs(dag);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].shape(), (std::vector<int64_t>{testing::kRows, testing::kCols}));
  bool a_differs_from_b = false;
  for (int64_t k = 0; k < first[0].size(); ++k) {
    EXPECT_EQ(first[0][k], second[0][k]);
    EXPECT_EQ(first[1][k], second[1][k]);
    a_differs_from_b |= first[0][k] != first[1][k];
  }
  EXPECT_TRUE(a_differs_from_b);

  auto outputs = make_outputs(dag);
  ASSERT_EQ(outputs.size(), 1u);
  for (int64_t k = 0; k < outputs[0].size(); ++k) EXPECT_EQ(outputs[0][k], 0.f);

  auto args = kernel_arg_pointers(first, outputs);
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[0], first[0].data());
  EXPECT_EQ(args[2], outputs[0].data());
  auto flush = flush_list_of(first, outputs);
  // Every argument but the first input, which a network's previous kernel leaves in cache.
  ASSERT_EQ(flush.size(), 2u);
  EXPECT_EQ(flush[0].first, first[1].data());
  EXPECT_EQ(flush[1].first, outputs[0].data());
  EXPECT_EQ(flush[1].second, static_cast<size_t>(testing::kRows * testing::kCols * 4));
}

TEST(MeasureKernelArgs, CompareReportsErrorsAndFirstMismatch) {
  float want[4] = {1, 2, 0, -4};
  float close[4] = {1.00001f, 2, 0, -4};
  auto ok = compare_output(close, want, 4);
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(ok.first_bad_index, -1);
  EXPECT_GT(ok.max_abs_error, 0);

  float bad[4] = {1, 2.5f, 0.5f, -4};
  auto c = compare_output(bad, want, 4);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.first_bad_index, 1);
  EXPECT_DOUBLE_EQ(c.max_abs_error, 0.5);
  EXPECT_DOUBLE_EQ(c.max_rel_error, 0.5 / 4);  // relative to the largest |want|
  EXPECT_NE(c.describe().find("first mismatch at 1"), std::string::npos) << c.describe();
}

// Normwise: an output near 0 may carry the rounding error of the largest
// outputs, not a larger one; an all-zero reference wants exact zeros.
TEST(MeasureKernelArgs, ToleranceIsRelativeToTheLargestOutput) {
  float want[3] = {1000, -1000, 0.001f};
  float got[3] = {1000, -1000, 0.05f};  // off by 0.049 <= 1e-4 * 1000
  EXPECT_TRUE(compare_output(got, want, 3).ok);
  got[0] = 1000.2f;  // off by 0.2 > 0.1
  EXPECT_FALSE(compare_output(got, want, 3).ok);
  float zeros[2] = {0, 0}, tiny[2] = {0, 1e-30f};
  EXPECT_TRUE(compare_output(zeros, zeros, 2).ok);
  EXPECT_FALSE(compare_output(tiny, zeros, 2).ok);
}

// A reference that is itself NaN or infinite somewhere (a NaN input, an
// overflow) wants the same non-finite value there, and the finite rest is
// compared as usual.
TEST(MeasureKernelArgs, ANonFiniteReferenceWantsTheSameValue) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN(), kInf = std::numeric_limits<float>::infinity();
  float want[4] = {kNaN, kInf, -kInf, 2};
  float same[4] = {kNaN, kInf, -kInf, 2.00001f};
  EXPECT_TRUE(compare_output(same, want, 4).ok) << compare_output(same, want, 4).describe();
  float finite_for_nan[4] = {0, kInf, -kInf, 2};
  EXPECT_EQ(compare_output(finite_for_nan, want, 4).first_bad_index, 0);
  float wrong_sign[4] = {kNaN, -kInf, -kInf, 2};
  EXPECT_EQ(compare_output(wrong_sign, want, 4).first_bad_index, 1);
  float off[4] = {kNaN, kInf, -kInf, 2.5f};  // the finite part still counts
  EXPECT_EQ(compare_output(off, want, 4).first_bad_index, 3);
}

TEST(MeasureKernelArgs, NaNNeverMatches) {
  float want[2] = {1, 2};
  float got[2] = {1, std::numeric_limits<float>::quiet_NaN()};
  auto c = compare_output(got, want, 2, 1e9);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.first_bad_index, 1);
}

}  // namespace
}  // namespace tessera::measure
