// The graph tuner on a whole network: every convolution gets blocks, the
// choice is never estimated slower than the default, its records file gives
// the build the same choice, and networks with mixed channel blocks (the
// transforms between them, residual adds across them) compute what the
// reference interpreter computes.
#include "driver/graph_tuner.h"

#include <gtest/gtest.h>

#include <sstream>

#include "autotvm/history.h"
#include "compile/build.h"
#include "driver/extract_tasks.h"
#include "compile/network_check.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "graph/onnx_import.h"
#include "measure/kernel_args.h"
#include "records/apply_history_best.h"
#include "runtime/graph_executor.h"
#include "runtime/thread_pool.h"
#include "tessera/error.h"

namespace tessera::driver {
using namespace build;  // the builds the tasks and choices are for
namespace {

using test::expect_matches_interpreter;
using test::narrow_resnet18;

// The blocked convolutions of the narrow ResNet-18 (widths 8, 16, 24, 32), by name.
std::vector<std::string> conv_names(const graph::Graph& optimized) {
  std::vector<std::string> names;
  for (const graph::Node& n : optimized.nodes())
    if (n.op == graph::Op::kConv2d) names.push_back(n.name);
  return names;
}

// The graph tuner at 1 thread on the host, measuring with a local runner.
GraphTunerResult tune_on_one_thread(const graph::Graph& model, const std::vector<records::Record>& log, int rounds,
                                    std::ostream& out) {
  target::Target target = target::Target::host();
  target.threads = 1;
  measure::LocalBuilder builder;
  measure::LocalRunner runner;
  GraphTunerOptions options;
  options.builder = &builder;
  options.runner = &runner;
  options.rounds = rounds;
  return tune_graph(model, target, log, options, out);
}

TEST(GraphTunerBuild, MixedChannelBlocksMatchTheInterpreter) {
  const graph::Graph model = narrow_resnet18();
  const target::Target target = target::Target::host();
  BuildOptions options;
  // Neighbours disagree everywhere: blocks 2, 4 and 8 in turn (all divide
  // 8, 16, 24 and 32 channels), input and output blocks differing.
  const std::vector<std::string> names = conv_names(optimize_for_target(model, target));
  ASSERT_GE(names.size(), 20u);
  const int64_t choices[] = {2, 4, 8};
  for (size_t i = 0; i < names.size(); ++i) options.conv_blocks[names[i]] = {choices[i % 3], choices[(i + 1) % 3]};
  options.conv_blocks[names[0]].ic_bn = 1;  // the 3-channel stem
  BuildResult built = build::build(model, target, options);
  int transforms = 0;
  for (const graph::Node& n : built.optimized.nodes()) transforms += n.op == graph::Op::kLayoutTransform;
  EXPECT_GE(transforms, 10);  // producers and readers disagree: transforms between blocks
  expect_matches_interpreter(model, std::move(built));
}

TEST(GraphTunerBuild, BlocksThatDoNotDivideTheChannelsAreAnErrorNamingTheConvolution) {
  const graph::Graph model = narrow_resnet18();
  const target::Target target = target::Target::host();
  const std::string first = conv_names(optimize_for_target(model, target)).at(1);
  BuildOptions options;
  options.conv_blocks[first] = {8, 16};  // 8 output channels
  try {
    build::build(model, target, options);
    FAIL() << "built with blocks that do not divide the channels";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(first), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("do not divide"), std::string::npos) << e.what();
  }
}

TEST(GraphTunerBuild, ChoosesBlocksForEveryConvolutionAndBuildsWithItsRecords) {
  const graph::Graph model = narrow_resnet18();
  target::Target target = target::Target::host();
  target.threads = 2;
  measure::LocalBuilder builder;
  measure::LocalRunnerOptions run;
  run.num_threads = 2;
  measure::LocalRunner runner(run);
  GraphTunerOptions options;
  options.builder = &builder;
  options.runner = &runner;
  for (const char* solver : {"dp", "pbqp"}) {
    options.solver = solver;
    std::ostringstream out;
    const GraphTunerResult r = tune_graph(model, target, {}, options, out);
    EXPECT_EQ(r.solver, solver);
    EXPECT_EQ(r.conv_blocks.size(), conv_names(optimize_for_target(model, target)).size());
    EXPECT_EQ(r.convolutions, static_cast<int>(r.conv_blocks.size()));
    EXPECT_GE(r.edges, 15);  // each block's data path and its residual
    EXPECT_GT(r.transforms_measured, 0);
    EXPECT_LE(r.chosen_seconds, r.default_seconds);
    EXPECT_NE(out.str().find("INFO Start to benchmark layout transformation..."), std::string::npos);
    // No kernel records: every state is its fallback config, measured.
    EXPECT_GT(r.kernels_measured, 0);
    EXPECT_EQ(r.kernels_untuned, r.kernels_measured);
    EXPECT_EQ(graph_choices(r.records), r.conv_blocks);

    records::ApplyHistoryBest history(r.records);
    BuildOptions with_choice;
    with_choice.history = &history;
    with_choice.conv_blocks = graph_choices(r.records);
    std::ostringstream warnings;
    with_choice.warnings = &warnings;
    BuildResult built = build::build(model, target, with_choice);
    for (const KernelSummary& k : built.kernels)
      if (k.name.find("conv2d") != std::string::npos) EXPECT_TRUE(k.tuned) << k.name << "\n" << warnings.str();
    expect_matches_interpreter(model, std::move(built));
  }
}

TEST(GraphTunerBuild, TunedStatesAreMeasuredAgainNotTakenFromTheLog) {
  // The log's times were taken at other moments (a slow spell, other runner
  // options); the tuner times its states side by side. A record claiming 1 s
  // for every default-block convolution must not make the default look slow:
  // the default still costs what its kernels measure now, and the choice is
  // estimated no slower than that.
  const graph::Graph model = narrow_resnet18();
  target::Target target = target::Target::host();
  target.threads = 1;
  std::vector<records::Record> log;
  for (const NetworkTask& t : extract_tasks(optimize_for_target(model, target), target)) {
    if (t.task.op != "conv2d" && t.task.op != "conv2d_winograd") continue;
    measure::MeasureResult slow;
    slow.costs = {1.0, 1.0, 1.0};
    log.push_back(autotvm::make_record(t.task, t.task.space.fallback(), slow));
  }
  ASSERT_GE(log.size(), 5u);
  std::ostringstream out;
  const GraphTunerResult r = tune_on_one_thread(model, log, 2, out);
  EXPECT_GT(r.kernels_measured, r.kernels_untuned);  // the logged configs were timed too
  EXPECT_LT(r.default_seconds, 0.5);                 // not the log's 1 s per convolution
  EXPECT_LE(r.chosen_seconds, r.default_seconds);
  EXPECT_NE(out.str().find("interleaved rounds"), std::string::npos) << out.str();
}

TEST(GraphTunerBuild, APoolingBetweenConvolutionsCarriesTheirEdge) {
  // conv -> max pool -> conv: the pool runs in the first convolution's
  // blocks, so the second's choice pays a transform of the pooled value.
  graph::GraphBuilder b;
  graph::NodeId x = b.input("x", {1, 16, 16, 16});
  x = b.conv2d(x, b.random_constant("a.w", {32, 16, 3, 3}, -0.2f, 0.2f), graph::Conv2dAttrs::symmetric(1, 1), "a");
  x = b.max_pool2d(x, graph::Pool2dAttrs::symmetric(2, 2), "pool");
  x = b.conv2d(x, b.random_constant("b.w", {32, 32, 1, 1}, -0.2f, 0.2f), graph::Conv2dAttrs{}, "b");
  const graph::Graph model = b.finish({x});
  std::ostringstream out;
  const GraphTunerResult r = tune_on_one_thread(model, {}, 1, out);
  EXPECT_EQ(r.convolutions, 2);
  EXPECT_EQ(r.edges, 1);
  EXPECT_GT(r.transforms_measured, 0);
}

TEST(GraphTunerBuild, SqueezeExcitationCarriesItsEdgesThroughThePoolAndTheScale) {
  // conv a -> (global pool -> fc -> sigmoid) x a -> conv b: the global pool
  // and the multiply run in a's blocks, so fc's and b's choices each pay the
  // transform of what they read from a (the pooled values; the scaled ones).
  graph::GraphBuilder b;
  graph::NodeId x = b.input("x", {1, 16, 8, 8});
  x = b.relu(b.conv2d(x, b.random_constant("a.w", {32, 16, 3, 3}, -0.2f, 0.2f), graph::Conv2dAttrs::symmetric(1, 1),
                      "a"),
             "a.relu");
  graph::NodeId s = b.global_avg_pool2d(x, "NCHW", "pool");
  s = b.sigmoid(b.conv2d(s, b.random_constant("fc.w", {32, 32, 1, 1}, -0.2f, 0.2f), graph::Conv2dAttrs{}, "fc"),
                "gate");
  x = b.conv2d(b.multiply(x, s, "scale"), b.random_constant("b.w", {16, 32, 1, 1}, -0.2f, 0.2f),
               graph::Conv2dAttrs{}, "b");
  const graph::Graph model = b.finish({x});
  std::ostringstream out;
  const GraphTunerResult r = tune_on_one_thread(model, {}, 1, out);
  EXPECT_EQ(r.convolutions, 3);
  EXPECT_EQ(r.edges, 2) << out.str();
  EXPECT_GT(r.transforms_measured, 0);
}

TEST(GraphTunerBuild, ADepthwiseProjectionKernelIsANodeWithItsTransforms) {
  // expand 1x1 -> depthwise 3x3 + bias + clip -> projection 1x1 + bias, at
  // 56x56: the depthwise and the projection are one kernel (no task, no
  // choice), but the expand's choice of output blocks must still pay the
  // transform into it: the fused kernel is a node, its input an edge.
  graph::GraphBuilder b;
  graph::NodeId x = b.input("x", {1, 16, 56, 56});
  x = b.conv2d(x, b.random_constant("expand.w", {32, 16, 1, 1}, -0.2f, 0.2f), graph::Conv2dAttrs{}, "expand");
  x = b.conv2d(x, b.random_constant("dw.w", {32, 1, 3, 3}, -0.2f, 0.2f), graph::Conv2dAttrs::symmetric(1, 1, 1, 32),
               "dw");
  x = b.clip(b.bias_add(x, b.random_constant("dw.b", {32}, -0.2f, 0.2f), 1, "dw.bias"), 0.f, 6.f, "dw.clip");
  x = b.conv2d(x, b.random_constant("project.w", {16, 32, 1, 1}, -0.2f, 0.2f), graph::Conv2dAttrs{}, "project");
  const graph::Graph model = b.finish({b.bias_add(x, b.random_constant("project.b", {16}, -0.2f, 0.2f), 1, "out")});
  std::ostringstream out;
  const GraphTunerResult r = tune_on_one_thread(model, {}, 1, out);
  EXPECT_EQ(r.convolutions, 2);  // the expand, and the fused kernel with its one state
  EXPECT_EQ(r.edges, 1);
  EXPECT_EQ(r.conv_blocks.size(), 1u);  // only the expand is chosen for
  EXPECT_EQ(r.conv_blocks.count("expand"), 1u);
  EXPECT_LE(r.chosen_seconds, r.default_seconds);
}

TEST(GraphTunerBuild, GraphChoicesRefuseTwoBlocksForOneConvolution) {
  records::Record a, b;
  a.workload = {{"op", "conv2d"}, {"args", {{"ic_bn", 8}, {"oc_bn", 8}}}, {"nodes", {"conv1"}}};
  b.workload = {{"op", "conv2d"}, {"args", {{"ic_bn", 4}, {"oc_bn", 8}}}, {"nodes", {"conv1"}}};
  EXPECT_EQ(graph_choices({a}).at("conv1"), (graph::ConvBlocks{8, 8}));
  EXPECT_THROW(graph_choices({a, b}), Error);
  records::Record kernel_only;  // a kernel tuner's record chooses nothing
  kernel_only.workload = {{"op", "conv2d"}, {"args", {{"ic_bn", 8}, {"oc_bn", 8}}}};
  EXPECT_TRUE(graph_choices({kernel_only}).empty());
  records::Record auto_scheduled;  // names its nodes (one string), chooses no blocks
  auto_scheduled.task_name = records::kAutoScheduleTaskName;
  auto_scheduled.workload = {{"nodes", "conv1.bn + bn1 + relu"}};
  EXPECT_TRUE(graph_choices({auto_scheduled}).empty());
}

}  // namespace
}  // namespace tessera::driver
