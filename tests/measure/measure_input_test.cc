#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "measure/measure_input.h"
#include "tessera/error.h"

namespace tessera::measure {
namespace {

TEST(MeasureErrorKind, StringRoundTrip) {
  for (ErrorKind k : {ErrorKind::None, ErrorKind::Instantiation, ErrorKind::CompileHost,
                      ErrorKind::CompileDevice, ErrorKind::RuntimeDevice, ErrorKind::WrongAnswer,
                      ErrorKind::BuildTimeout, ErrorKind::RunTimeout, ErrorKind::Unknown})
    EXPECT_EQ(error_kind_from_string(to_string(k)), k) << to_string(k);
  EXPECT_EQ(to_string(ErrorKind::CompileHost), "compile-host");
  EXPECT_EQ(to_string(ErrorKind::RunTimeout), "run-timeout");
}

TEST(MeasureErrorKind, UnknownNameThrowsNamingIt) {
  try {
    error_kind_from_string("segfault");
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("segfault"), std::string::npos);
  }
}

TEST(MeasureResult, MinAndMeanCost) {
  MeasureResult r;
  EXPECT_TRUE(std::isinf(r.min_cost()));
  EXPECT_TRUE(std::isinf(r.mean_cost()));
  r.costs = {3, 1, 2};
  EXPECT_DOUBLE_EQ(r.min_cost(), 1);
  EXPECT_DOUBLE_EQ(r.mean_cost(), 2);
}

TEST(MeasureResult, ValidMeansNoErrorAndAPositiveFiniteFastestCost) {
  MeasureResult r;
  EXPECT_FALSE(r.valid());  // no cost
  r.costs = {2e-3, 1e-3};
  EXPECT_TRUE(r.valid());
  r.error = ErrorKind::WrongAnswer;
  EXPECT_FALSE(r.valid());
  r.error = ErrorKind::None;
  r.costs = {0.0, 1e-3};
  EXPECT_FALSE(r.valid());
  r.costs = {std::numeric_limits<double>::infinity()};
  EXPECT_FALSE(r.valid());
}

TEST(MeasureResult, MedianCost) {
  MeasureResult r;
  EXPECT_TRUE(std::isinf(r.median_cost()));
  r.costs = {9, 1, 2};
  EXPECT_DOUBLE_EQ(r.median_cost(), 2);
  r.costs = {4, 1, 2, 100};
  EXPECT_DOUBLE_EQ(r.median_cost(), 3);
}

}  // namespace
}  // namespace tessera::measure
