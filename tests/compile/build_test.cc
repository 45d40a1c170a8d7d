// Whole networks compiled by src/compile and run by GraphExecutor equal
// the reference interpreter on the original graph (before any pass).
#include "compile/build.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <limits>

#include "target/target.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "graph/zoo.h"
#include "measure/kernel_args.h"
#include "runtime/graph_executor.h"
#include "runtime/thread_pool.h"

namespace tessera::build {
namespace {

// Compiles `g` for `target` (one this host runs), runs it with `threads` on
// seeded inputs and compares every output with the interpreter.
BuildResult expect_matches_interpreter(const graph::Graph& g, int threads = 2, bool via_file = false,
                                       const BuildOptions& options = {},
                                       const target::Target& target = target::Target::host()) {
  BuildResult built = build(g, target, options);
  std::vector<runtime::NDArray> inputs;
  for (graph::NodeId id : g.input_ids()) {
    inputs.emplace_back(g.node(id).type.shape);
    inputs.back().fill_random(11 + id);
  }
  const auto want = graph::interpret(g, inputs);
  runtime::Artifact artifact = std::move(built.artifact);
  std::optional<runtime::GraphExecutor> ex;
  if (via_file) {
    const std::string path = "/tmp/tessera-build-test-" + std::to_string(getpid()) + ".tsr";
    runtime::write_artifact(artifact, path);
    ex.emplace(runtime::GraphExecutor::load(path));
    unlink(path.c_str());
  } else {
    ex.emplace(std::move(artifact), "test");
  }
  runtime::set_num_threads(threads);
  for (size_t i = 0; i < inputs.size(); ++i) ex->set_input(static_cast<int>(i), inputs[i]);
  ex->run();
  runtime::set_num_threads(0);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(measure::compare_output(ex->get_output(static_cast<int>(i)), want[i]).ok)
        << "output " << i << ": " << measure::compare_output(ex->get_output(static_cast<int>(i)), want[i]).describe();
  return built;
}

// ResNeXt's stage of groups of 4 channels, compiled for AVX2 (blocks of 8,
// which every x86-64 host here runs): the groups run merged in pairs
// (graph/merged_groups.h), in the blocks of the convolutions around them,
// and the network equals the interpreter on the original graph.
TEST(Build, NarrowGroupsRunMergedInTheNetworksBlocks) {
  graph::GraphBuilder b(9);
  graph::NodeId x = b.input("data", {1, 16, 14, 14});
  graph::NodeId y = b.relu(
      b.conv2d(x, b.random_constant("a.w", {32, 16, 1, 1}, -0.3f, 0.3f), graph::Conv2dAttrs::symmetric(1, 0), "a"),
      "a.relu");
  y = b.relu(
      b.conv2d(y, b.random_constant("b.w", {32, 4, 3, 3}, -0.3f, 0.3f), graph::Conv2dAttrs::symmetric(1, 1, 1, 8), "b"),
      "b.relu");
  y = b.conv2d(y, b.random_constant("c.w", {16, 32, 1, 1}, -0.3f, 0.3f), graph::Conv2dAttrs::symmetric(1, 0), "c");
  const graph::Graph g = b.finish({b.relu(b.add(y, x, "residual"), "out")});
  target::Target avx2 = target::Target::parse("llvm -mcpu=haswell");
  const BuildResult built = expect_matches_interpreter(g, 2, false, {}, avx2);
  // Into the blocks (the input, for the first convolution and the residual)
  // and out of them; none around the grouped convolution.
  std::string names;
  int transforms = 0;
  for (const auto& k : built.kernels) {
    names += k.name + " (" + k.nodes + ") ";
    transforms += k.name.find("layout_transform") != std::string::npos;
  }
  EXPECT_EQ(transforms, 2) << names;
}

TEST(Build, ASmallNetworkOfEveryKernelKindMatchesTheInterpreter) {
  graph::GraphBuilder b(5);
  graph::NodeId x = b.input("data", {2, 6, 12, 12});
  graph::NodeId y = b.conv2d(x, b.random_constant("c1", {16, 6, 3, 3}, -0.3f, 0.3f),
                             graph::Conv2dAttrs::symmetric(2, 1), "conv1");
  graph::BatchNormAttrs bn;
  y = b.batch_norm(y, b.random_constant("g", {16}, 0.5f, 1.5f), b.random_constant("b", {16}, -1, 1),
                   b.random_constant("m", {16}, -1, 1), b.random_constant("v", {16}, 0.5f, 2), bn, "bn1");
  y = b.clip(y, 0, 6, "relu6");
  graph::NodeId dw = b.conv2d(y, b.random_constant("dw", {16, 1, 3, 3}, -0.5f, 0.5f),
                              graph::Conv2dAttrs::symmetric(1, 1, 1, 16), "depthwise");
  graph::NodeId pw = b.conv2d(dw, b.random_constant("pw", {16, 16, 1, 1}, -0.3f, 0.3f),
                              graph::Conv2dAttrs::symmetric(1, 0), "pointwise");
  y = b.relu(b.add(pw, y, "residual"), "relu");
  graph::NodeId pooled = b.max_pool2d(y, graph::Pool2dAttrs::symmetric(3, 2, 1), "maxpool");
  graph::NodeId avg = b.avg_pool2d(y, graph::Pool2dAttrs::symmetric(3, 2, 1), "avgpool");
  y = b.concat({pooled, avg}, 1, "concat");
  y = b.global_avg_pool2d(y, "NCHW", "gap");
  y = b.flatten(y, 1, "flatten");
  y = b.dense(y, b.random_constant("fc.weight", {10, 32}, -0.3f, 0.3f), "fc");
  y = b.bias_add(y, b.random_constant("fc.bias", {10}, -1, 1), 1, "fc.bias");
  graph::NodeId probs = b.softmax(y, -1, "softmax");
  graph::Graph g = b.finish({probs, y});
  for (int threads : {1, 2}) expect_matches_interpreter(g, threads, /*via_file=*/threads == 2);
}

TEST(Build, ReluAndClipKeepNaNAsTheFrameworksDo) {
  // Standalone and fused after a convolution's epilogue: NaN in, NaN out
  // (onnxruntime and PyTorch keep it; max(x, 0) made it 0).
  graph::GraphBuilder b(6);
  graph::NodeId x = b.input("x", {1, 16, 4, 4});
  graph::NodeId relu = b.relu(x, "relu");
  graph::NodeId clip = b.clip(x, 0, 6, "clip");
  graph::NodeId conv = b.relu(b.conv2d(x, b.random_constant("w", {16, 16, 1, 1}, -0.3f, 0.3f),
                                       graph::Conv2dAttrs::symmetric(1, 0), "conv"),
                              "conv.relu");
  graph::Graph g = b.finish({relu, clip, conv});
  BuildResult built = build(g, target::Target::host());
  runtime::GraphExecutor ex(std::move(built.artifact), "nan");
  runtime::NDArray in({1, 16, 4, 4});
  in.fill_random(3, -10, 10);
  const int64_t pixel = 5;  // channel 0, row 1, column 1: NaN reaches every output channel of that pixel
  in[pixel] = std::numeric_limits<float>::quiet_NaN();
  ex.set_input(0, in);
  ex.run();
  std::vector<runtime::NDArray> inputs;
  inputs.push_back(std::move(in));
  const auto want = graph::interpret(g, inputs);
  const runtime::NDArray& in_ref = inputs[0];
  for (int o = 0; o < 3; ++o) {
    const runtime::NDArray got = ex.get_output(o);
    for (int64_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(std::isnan(got[i]), std::isnan(want[o][i])) << "output " << o << " element " << i;
      if (!std::isnan(want[o][i])) EXPECT_NEAR(got[i], want[o][i], 1e-4f) << "output " << o << " element " << i;
    }
  }
  EXPECT_TRUE(std::isnan(ex.get_output(0)[pixel]));
  EXPECT_TRUE(std::isnan(ex.get_output(1)[pixel]));
  EXPECT_TRUE(std::isnan(ex.get_output(2)[pixel + 16 * 15]));  // the last output channel at that pixel
  // The interpreter agrees with the frameworks' reading on its own.
  EXPECT_TRUE(std::isnan(want[0][pixel]));
  EXPECT_EQ(want[1][pixel + 1], std::min(std::max(in_ref[pixel + 1], 0.0f), 6.0f));
}

// keep_layout: the auto-scheduler's NHWC path. Every kernel computes in
// NHWC (no layout transform anywhere), pools and global pooling included,
// with a ceil-mode pool at the edge.
TEST(Build, NhwcNetworkKeptInItsLayoutMatchesTheInterpreter) {
  graph::GraphBuilder b(7);
  graph::NodeId x = b.input("data", {1, 11, 11, 6});
  graph::Conv2dAttrs conv = graph::Conv2dAttrs::symmetric(1, 1);
  conv.data_layout = "NHWC", conv.kernel_layout = "HWIO";
  graph::NodeId y = b.relu(b.conv2d(x, b.random_constant("c1", {3, 3, 6, 16}, -0.3f, 0.3f), conv, "conv1"), "relu1");
  graph::Pool2dAttrs max = graph::Pool2dAttrs::symmetric(3, 2, 1), avg = graph::Pool2dAttrs::symmetric(2, 2);
  max.layout = avg.layout = "NHWC";
  avg.ceil_mode = true;
  graph::NodeId pooled = b.max_pool2d(y, max, "maxpool");
  graph::NodeId averaged = b.avg_pool2d(y, avg, "avgpool");
  y = b.add(pooled, averaged, "add");
  y = b.global_avg_pool2d(y, "NHWC", "gap");
  y = b.flatten(y, 1, "flatten");
  y = b.dense(y, b.random_constant("fc.weight", {10, 16}, -0.3f, 0.3f), "fc");
  graph::Graph g = b.finish({b.softmax(y, -1, "softmax")});
  BuildOptions keep;
  keep.keep_layout = true;
  const BuildResult built = expect_matches_interpreter(g, 2, false, keep);
  for (const graph::Node& n : built.optimized.nodes()) EXPECT_NE(n.op, graph::Op::kLayoutTransform) << n.name;
  for (const auto& k : built.kernels)
    for (const auto& t : k.dag.tensors()) EXPECT_NE(t->shape.size(), 5u) << k.name << ": " << t->name;
}

TEST(Build, Resnet18InBothLayoutsMatchesTheInterpreter) {
  for (const std::string layout : {"NCHW", "NHWC"}) {
    BuildResult built = expect_matches_interpreter(graph::get_network("resnet-18", 1, layout));
    int calls = 0;
    for (const auto& k : built.kernels) calls += k.calls;
    // 20 convolutions with batch norm, residual and relu fused into them, the
    // pools, the classifier and the layout transforms at the edges of the
    // NCHW8c region (NHWC has two more: its input and the max pool's).
    EXPECT_LE(calls, layout == "NCHW" ? 26 : 30) << layout;
    EXPECT_LT(built.kernels.size(), static_cast<size_t>(calls)) << "repeated layers share a kernel";
  }
}

TEST(Build, MobilenetV2MatchesTheInterpreter) { expect_matches_interpreter(graph::get_network("mobilenet-v2")); }

TEST(Build, MobilenetV2InNhwcKeptInItsLayoutMatchesTheInterpreter) {
  BuildOptions keep;
  keep.keep_layout = true;
  const BuildResult built = expect_matches_interpreter(graph::get_network("mobilenet-v2", 1, "NHWC"), 2, false, keep);
  int depthwise = 0;
  for (const auto& k : built.kernels)
    for (const auto& t : k.dag.tensors()) depthwise += t->tag == "depthwise_conv2d_nhwc";
  EXPECT_GT(depthwise, 0);
}

TEST(Build, MobilenetV2WithEveryDepthwiseAndProjectionInOneKernelMatchesTheInterpreter) {
  BuildOptions options;
  options.fuse.depthwise_projection_min_rows = 1;  // all 17 blocks, strides 1 and 2, residual adds
  const BuildResult all = expect_matches_interpreter(graph::get_network("mobilenet-v2"), 2, false, options);
  const BuildResult by_default = build(graph::get_network("mobilenet-v2"), target::Target::host());
  auto calls = [](const BuildResult& b) {
    int n = 0;
    for (const auto& k : b.kernels) n += k.calls;
    return n;
  };
  EXPECT_EQ(calls(all), calls(by_default) - 14);  // the default fuses blocks 1-3 already
}

TEST(Build, SqueezenetAtBatchTwoMatchesTheInterpreter) {
  expect_matches_interpreter(graph::get_network("squeezenet_v1.1", 2));
}

}  // namespace
}  // namespace tessera::build
