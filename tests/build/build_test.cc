// Whole networks compiled by the build layer and run by GraphExecutor equal
// the reference interpreter on the original graph (before any pass).
#include "build/build.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "codegen/target.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "graph/zoo.h"
#include "measure/kernel_args.h"
#include "runtime/graph_executor.h"
#include "runtime/thread_pool.h"

namespace tessera::build {
namespace {

// Compiles `g` for the host, runs it with `threads` on seeded inputs and
// compares every output with the interpreter.
BuildResult expect_matches_interpreter(const graph::Graph& g, int threads = 2, bool via_file = false,
                                       const BuildOptions& options = {}) {
  BuildResult built = build(g, codegen::Target::host(), options);
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
  graph::NodeId pooled = b.max_pool2d(y, graph::PoolAttrs::symmetric(3, 2, 1), "maxpool");
  graph::NodeId avg = b.avg_pool2d(y, graph::PoolAttrs::symmetric(3, 2, 1), "avgpool");
  y = b.concat({pooled, avg}, 1, "concat");
  y = b.global_avg_pool2d(y, "NCHW", "gap");
  y = b.flatten(y, 1, "flatten");
  y = b.dense(y, b.random_constant("fc.weight", {10, 32}, -0.3f, 0.3f), "fc");
  y = b.bias_add(y, b.random_constant("fc.bias", {10}, -1, 1), 1, "fc.bias");
  graph::NodeId probs = b.softmax(y, -1, "softmax");
  graph::Graph g = b.finish({probs, y});
  for (int threads : {1, 2}) expect_matches_interpreter(g, threads, /*via_file=*/threads == 2);
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
  graph::PoolAttrs max = graph::PoolAttrs::symmetric(3, 2, 1), avg = graph::PoolAttrs::symmetric(2, 2);
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
  const BuildResult by_default = build(graph::get_network("mobilenet-v2"), codegen::Target::host());
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
