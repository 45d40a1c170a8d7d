// Whole networks compiled for a GPU target: the OpenCL kernels run on the
// OpenCL device (PoCL's CPU device in CI) against the reference interpreter,
// and the artifact's GPU code survives writing and reading.
#include <gtest/gtest.h>

#include <filesystem>

#include "compile/build.h"
#include "graph/interpreter.h"
#include "graph/zoo.h"
#include "measure/kernel_args.h"
#include "network_check.h"
#include "runtime/artifact.h"
#include "runtime/gpu_graph_executor.h"
#include "runtime/cuda_backend.h"
#include "runtime/opencl_device.h"
#include "tessera/error.h"

namespace tessera::build {
namespace {

void expect_gpu_matches_interpreter(const graph::Graph& model, const std::string& target_text) {
  const std::string why = target_text == "cuda" ? runtime::cuda_unavailable_reason() : runtime::opencl_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << target_text << ": " << why;
  BuildResult built = build(model, target::Target::parse(target_text));
  ASSERT_TRUE(built.artifact.gpu.has_value());
  EXPECT_TRUE(built.artifact.shared_object.empty());
  const std::string path = ::testing::TempDir() + "gpu_build_test.tsr";
  runtime::write_artifact(built.artifact, path);
  runtime::GpuGraphExecutor ex = runtime::GpuGraphExecutor::load(path);
  std::filesystem::remove(path);
  std::vector<runtime::NDArray> inputs;
  for (int i = 0; i < ex.num_inputs(); ++i) {
    inputs.emplace_back(ex.input_shape(i));
    inputs.back().fill_random(9 + i);
    ex.set_input(i, inputs.back());
  }
  ex.run();
  const auto want = graph::interpret(model, inputs);
  const measure::OutputComparison c = measure::compare_output(ex.get_output(0), want[0], 1e-4);
  EXPECT_TRUE(c.ok) << c.describe();
}

TEST(GpuBuild, NarrowResnet18OnOpenClMatchesTheInterpreter) {
  expect_gpu_matches_interpreter(test::narrow_resnet18(), "opencl");
}

TEST(GpuBuild, NarrowResnet18OnCudaMatchesTheInterpreter) {
  expect_gpu_matches_interpreter(test::narrow_resnet18(), "cuda");
}

// Every binary starts without a GPU: asking for the CUDA device there is one
// error saying why, not a crash at load time.
TEST(GpuBuild, WithoutACudaDriverTheBackendSaysWhy) {
  const std::string why = runtime::cuda_unavailable_reason();
  if (why.empty()) GTEST_SKIP() << "this machine has a CUDA GPU";
  try {
    runtime::make_gpu_backend("cuda");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
  EXPECT_FALSE(runtime::cuda_device_info().has_value());
}

}  // namespace
}  // namespace tessera::build
