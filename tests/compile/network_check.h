#pragma once
// Shared by the build tests: the narrow ResNet-18 of tests/data/onnx (the
// whole torchvision topology at a few channels), and running a built network
// on seeded inputs against the reference interpreter.
#include <gtest/gtest.h>

#include <string>

#include "compile/build.h"
#include "graph/interpreter.h"
#include "graph/onnx_import.h"
#include "measure/kernel_args.h"
#include "runtime/graph_executor.h"
#include "runtime/thread_pool.h"

namespace tessera::build::test {

inline graph::Graph narrow_resnet18() {
  return graph::import_onnx(std::string(TESSERA_SOURCE_DIR) + "/tests/data/onnx/resnet18_narrow.onnx");
}

// Runs the built `model` (one input) with two threads and expects its first
// output to equal the interpreter's.
inline void expect_matches_interpreter(const graph::Graph& model, BuildResult built) {
  std::vector<runtime::NDArray> inputs;
  inputs.emplace_back(model.node(model.input_ids()[0]).type.shape);
  inputs.back().fill_random(9);
  const auto want = graph::interpret(model, inputs);
  runtime::GraphExecutor ex(std::move(built.artifact), "test");
  runtime::set_num_threads(2);
  ex.set_input(0, inputs[0]);
  ex.run();
  runtime::set_num_threads(0);
  const measure::OutputComparison c = measure::compare_output(ex.get_output(0), want[0]);
  EXPECT_TRUE(c.ok) << c.describe();
}

}  // namespace tessera::build::test
