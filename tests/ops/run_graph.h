#pragma once
// Test helpers that run a small graph both ways: interpreted (the operators'
// references) and compiled for this host, and compare values to a formula
// written in the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "compile/build.h"
#include "graph/graph.h"
#include "graph/interpreter.h"
#include "runtime/graph_executor.h"
#include "target/target.h"

namespace tessera::ops::test {

inline runtime::NDArray array_of(const Shape& shape, const std::vector<float>& values) {
  runtime::NDArray a(shape);
  std::copy(values.begin(), values.end(), a.data());
  return a;
}

inline std::vector<float> values_of(const runtime::NDArray& a) { return std::vector<float>(a.data(), a.data() + a.size()); }

// The graph's first output, compiled for this host and run, and interpreted.
struct Outputs {
  std::vector<float> compiled, interpreted;
};

struct Input {
  Shape shape;
  std::vector<float> values;
};

inline Outputs run_both(const graph::Graph& g, const std::vector<Input>& inputs) {
  Outputs out;
  std::vector<runtime::NDArray> arrays;
  for (const Input& x : inputs) arrays.push_back(array_of(x.shape, x.values));
  out.interpreted = values_of(graph::interpret(g, arrays).at(0));
  build::BuildResult built = build::build(g, target::Target::host());
  runtime::GraphExecutor ex(std::move(built.artifact), "math");
  for (size_t i = 0; i < arrays.size(); ++i) ex.set_input(static_cast<int>(i), arrays[i]);
  ex.run();
  out.compiled = values_of(ex.get_output(0));
  return out;
}

// |got - want| <= tolerance * max(1, |want|); NaN where want is NaN, the
// same infinity where want is infinite.
inline void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tolerance,
                  const std::string& what, const std::vector<float>& x = {}) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string at = what + " at " + std::to_string(i) + (x.empty() ? "" : " (x = " + std::to_string(x[i]) + ")");
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << at << ": " << got[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], static_cast<float>(want[i])) << at;
    } else {
      EXPECT_LE(std::fabs(got[i] - want[i]), tolerance * std::max(1.0, std::fabs(want[i])))
          << at << ": got " << got[i] << ", want " << want[i];
    }
  }
}

}  // namespace tessera::ops::test
