// One artifact for a range of one dimension (driver::compile_varying,
// runtime::VaryingExecutor): the tiny BERT (with its attention mask) and
// GPT-2 at three sequence lengths, a narrow ResNet-18 at three batch sizes,
// each against onnxruntime's outputs saved beside the model (the BERT on
// the OpenCL device too); the weights stored once; bad sizes refused with
// one line.
#include "driver/compile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "graph/model_source.h"
#include "runtime/graph_executor.h"
#include "runtime/npy.h"
#include "runtime/opencl_device.h"
#include "runtime/varying_executor.h"
#include "target/target.h"
#include "tessera/error.h"

namespace tessera::driver {
namespace {

const std::string kData = std::string(TESSERA_SOURCE_DIR) + "/tests/data/onnx/";

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// `model` compiled over `range` of dimension `name` (--dim NAME=RANGE), written and read back.
runtime::VaryingExecutor compiled(const std::string& model, const std::string& name, const std::string& range,
                                  const std::string& buckets = "",
                                  const target::Target& target = target::Target::host()) {
  graph::ModelOptions options;
  graph::parse_dim_flag(name + "=" + range, options);
  if (!buckets.empty()) graph::parse_buckets_flag(buckets, options);
  const VaryingBuildResult built = compile_varying(
      [&](int64_t size) { return graph::load_model(kData + model + ".onnx", options.at_size(size)); },
      *options.varying, target);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tessera_varying_" + model + range + target.kind + ".tsr")).string();
  runtime::write_artifact(built.artifact, path);
  runtime::VaryingExecutor ex = runtime::VaryingExecutor::load(path);
  std::filesystem::remove(path);
  return ex;
}

// Runs `ex` on the saved inputs of size n and compares with onnxruntime's output.
void expect_matches_onnxruntime(runtime::VaryingExecutor& ex, const std::string& model, int64_t n,
                                int64_t bucket) {
  const std::string prefix = kData + model + ".s" + std::to_string(n) + ".";
  for (int i = 0; i < ex.num_inputs(); ++i) ex.set_input(i, runtime::read_npy(prefix + "input" + std::to_string(i) + ".npy"));
  ex.run();
  EXPECT_EQ(ex.size(), n);
  EXPECT_EQ(ex.bucket(), bucket);
  const runtime::NDArray want = runtime::read_npy(prefix + "expected.npy");
  const runtime::NDArray got = ex.get_output(0);
  ASSERT_EQ(got.shape(), want.shape()) << model << " at " << n;
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
    scale = std::max(scale, std::abs(double(want[i])));
  }
  EXPECT_LE(worst, 1e-4 * scale) << model << " at " << n;
}

TEST(CompileVarying, OneBertArtifactRunsThreeSequenceLengthsAsOnnxruntime) {
  runtime::VaryingExecutor ex = compiled("bert_tiny_dynamic", "sequence", "1..16");
  EXPECT_EQ(ex.varying().buckets, (std::vector<int64_t>{1, 2, 4, 8, 16}));
  EXPECT_TRUE(ex.varying().masked);
  EXPECT_EQ(ex.varying().inputs.size(), 2u);  // ids and mask
  expect_matches_onnxruntime(ex, "bert_tiny_dynamic", 3, 4);
  expect_matches_onnxruntime(ex, "bert_tiny_dynamic", 8, 8);
  expect_matches_onnxruntime(ex, "bert_tiny_dynamic", 13, 16);
  expect_matches_onnxruntime(ex, "bert_tiny_dynamic", 3, 4);  // back to a smaller bucket
}

TEST(CompileVarying, OneGpt2ArtifactRunsThreeSequenceLengthsAsOnnxruntime) {
  runtime::VaryingExecutor ex = compiled("gpt2_tiny_dynamic", "sequence", "2..16", "4,12");
  EXPECT_EQ(ex.varying().buckets, (std::vector<int64_t>{4, 12, 16}));
  expect_matches_onnxruntime(ex, "gpt2_tiny_dynamic", 3, 4);
  expect_matches_onnxruntime(ex, "gpt2_tiny_dynamic", 8, 12);
  expect_matches_onnxruntime(ex, "gpt2_tiny_dynamic", 13, 16);
}

TEST(CompileVarying, OneCnnArtifactRunsThreeBatchSizesAsOnnxruntime) {
  runtime::VaryingExecutor ex = compiled("resnet18_narrow_dynamic", "batch", "1..4");
  EXPECT_FALSE(ex.varying().masked);  // nothing mixes the batch
  expect_matches_onnxruntime(ex, "resnet18_narrow_dynamic", 1, 1);
  expect_matches_onnxruntime(ex, "resnet18_narrow_dynamic", 3, 4);
  expect_matches_onnxruntime(ex, "resnet18_narrow_dynamic", 4, 4);
}

// The same artifact for a GPU target: every bucket's GPU code written and
// read back, each bucket run on the OpenCL device (PoCL here), the padded
// keys masked there too.
TEST(CompileVarying, OneBertArtifactRunsEveryBucketOnTheOpenClDevice) {
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  runtime::VaryingExecutor ex = compiled("bert_tiny_dynamic", "sequence", "1..16", "4,8", target::Target::parse("opencl"));
  ASSERT_TRUE(ex.on_gpu());
  EXPECT_EQ(ex.varying().buckets, (std::vector<int64_t>{4, 8, 16}));
  expect_matches_onnxruntime(ex, "bert_tiny_dynamic", 3, 4);
  expect_matches_onnxruntime(ex, "bert_tiny_dynamic", 13, 16);
  expect_matches_onnxruntime(ex, "bert_tiny_dynamic", 8, 8);
  EXPECT_NE(message_of([&] { ex.executor(8); }).find("runs on a GPU"), std::string::npos);
}

TEST(CompileVarying, TheBucketsShareOneCopyOfTheWeights) {
  graph::ModelOptions options;
  graph::parse_dim_flag("sequence=1..16", options);
  const VaryingBuildResult built = compile_varying(
      [&](int64_t size) { return graph::load_model(kData + "bert_tiny_dynamic.onnx", options.at_size(size)); },
      *options.varying, target::Target::host());
  int64_t weights = 0, own = 0, shared = 0;
  for (const auto& p : built.artifact.params) weights += p.size();
  ASSERT_EQ(built.artifact.smaller.size(), 4u);
  for (const auto& b : built.artifact.smaller) {
    for (const auto& p : b.own) own += p.size();
    shared += std::count_if(b.shared.begin(), b.shared.end(), [](int i) { return i >= 0; });
  }
  EXPECT_GT(shared, 4 * 10);             // every bucket reads the layers' weights of the largest
  EXPECT_LT(own * 4, weights);           // what is its own: constants of its size (positions, masks)
}

TEST(CompileVarying, SizesOutOfTheRangeOrDisagreeingAreOneLineErrors) {
  runtime::VaryingExecutor ex = compiled("bert_tiny_dynamic", "sequence", "2..8");
  EXPECT_NE(message_of([&] { ex.set_input(0, runtime::NDArray({1, 9})); })
                .find("input 'ids' has shape [1, 9]; the model takes [1, 8] with sequence in 2..8 (sequence = 9 is "
                      "out of the range)"),
            std::string::npos);
  EXPECT_NE(message_of([&] { ex.set_input(0, runtime::NDArray({2, 4})); }).find("axis 0 is fixed"), std::string::npos);
  ex.set_input(0, runtime::NDArray({1, 5}));
  ex.set_input(1, runtime::NDArray({1, 6}));
  EXPECT_NE(message_of([&] { ex.run(); }).find("input 'mask' has sequence = 6, input 'ids' has 5: they must agree"),
            std::string::npos);
  // The plain executor does not take a varying artifact for a fixed one.
  graph::ModelOptions options;
  graph::parse_dim_flag("sequence=2..8", options);
  VaryingBuildResult built = compile_varying(
      [&](int64_t size) { return graph::load_model(kData + "bert_tiny_dynamic.onnx", options.at_size(size)); },
      *options.varying, target::Target::host());
  EXPECT_NE(message_of([&] { runtime::GraphExecutor(std::move(built.artifact), "bert.tsr"); })
                .find("bert.tsr: compiled for sequence in 2..8, which runtime::VaryingExecutor runs"),
            std::string::npos);
}

TEST(CompileVarying, AnImageSizeRunsAtTheListedSizesOnly) {
  graph::ModelOptions options;
  graph::parse_shape_flag("data=1x3x32..64x64", options);
  auto load = [&](int64_t size) { return graph::load_model(kData + "resnet18_narrow.onnx", options.at_size(size)); };
  EXPECT_NE(message_of([&] { compile_varying(load, *options.varying, target::Target::host()); })
                .find("node '/conv1/Conv' (conv2d) reads the varying axis at computed positions (a window or a "
                      "shift): padding data[2] to a bucket would change its result; list the sizes"),
            std::string::npos);
  graph::parse_buckets_flag("32,48", options);
  VaryingBuildResult built = compile_varying(load, *options.varying, target::Target::host());
  runtime::VaryingExecutor ex(std::move(built.artifact), "resnet.tsr");
  EXPECT_NE(ex.varying().exact_only.find("conv1"), std::string::npos);
  runtime::NDArray image({1, 3, 48, 64});
  image.fill_random(7);
  ex.set_input(0, image);
  ex.run();
  EXPECT_EQ(ex.bucket(), 48);
  ex.set_input(0, runtime::NDArray({1, 3, 40, 64}));
  EXPECT_NE(message_of([&] { ex.run(); })
                .find("resnet.tsr: data[2] = 40 is not one of the sizes compiled (32, 48, 64); padding it would "
                      "change the result"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::driver
