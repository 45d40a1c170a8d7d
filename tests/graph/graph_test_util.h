#pragma once
// Helpers for the graph tests: reproducible arrays, the message of an expected
// error, and the normwise error used for every numeric comparison.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/ndarray.h"
#include "tessera/error.h"

namespace tessera::graph::test {

inline runtime::NDArray random_array(std::vector<int64_t> shape, uint64_t seed = 1) {
  runtime::NDArray a(std::move(shape));
  a.fill_random(seed);
  return a;
}

inline runtime::NDArray array(std::vector<int64_t> shape, const std::vector<float>& values) {
  runtime::NDArray a(std::move(shape));
  EXPECT_EQ(a.size(), static_cast<int64_t>(values.size()));
  std::copy(values.begin(), values.end(), a.data());
  return a;
}

inline std::vector<float> values(const runtime::NDArray& a) { return {a.data(), a.data() + a.size()}; }

// The tessera::Error message of f(), or "no error".
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// max |got - want| / max |want|.
inline double max_relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < got.size(); ++i) {
    diff = std::max(diff, std::fabs(double(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(double(want[i])));
  }
  return diff / scale;
}

}  // namespace tessera::graph::test
