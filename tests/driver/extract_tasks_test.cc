// Task extraction from whole networks (seed 000: ResNet-18 is 12 tasks), and
// a network tuned into a log and built with it computes what the reference
// interpreter computes.
#include "driver/extract_tasks.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "autotvm/history.h"
#include "autotvm/tune_tasks.h"
#include "compile/build.h"
#include "compile/network_check.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "graph/model_source.h"
#include "graph/onnx_import.h"
#include "measure/builder.h"
#include "measure/kernel_args.h"
#include "measure/runner.h"
#include "records/apply_history_best.h"
#include "records/log_file.h"
#include "runtime/graph_executor.h"
#include "runtime/thread_pool.h"

namespace tessera::driver {
using namespace build;  // the builds the tasks and choices are for
namespace {

std::vector<NetworkTask> tasks_of(const std::string& model, const target::Target& target) {
  return extract_tasks(optimize_for_target(graph::load_model(model), target), target);
}

// Both vector widths, whatever the host: extraction compiles nothing.
class ExtractTasksPerWidth : public ::testing::TestWithParam<const char*> {};

TEST_P(ExtractTasksPerWidth, ResNet18HasTheSeedsTwelveConvAndDenseTasksWithTheirWeights) {
  const target::Target target = target::Target::parse(GetParam());
  const std::vector<NetworkTask> tasks = tasks_of("resnet-18", target);
  ASSERT_EQ(tasks.size(), 12u);
  std::map<std::string, int> templates;
  std::vector<int> weights;
  for (const NetworkTask& t : tasks) {
    ++templates[t.task.name()];
    weights.push_back(t.weight);
    EXPECT_EQ(static_cast<size_t>(t.weight), t.nodes.size());
  }
  // The 3x3 stride-1 convolutions run as Winograd (graph::winograd_tile_for)
  // but layer4's: a 7x7 image has too few tiles to reuse its weights over.
  EXPECT_EQ(templates, (std::map<std::string, int>{{"conv2d_NCHWc.x86", 5},
                                                   {"conv2d_NCHWc_1x1.x86", 3},
                                                   {"conv2d_NCHWc_winograd.x86", 3},
                                                   {"dense_pack.x86", 1}}));
  // conv1; layer1's four 3x3 convolutions; each later stage: its strided
  // first convolution, its three others, its downsample; the classifier.
  EXPECT_EQ(weights, (std::vector<int>{1, 4, 1, 3, 1, 1, 3, 1, 1, 3, 1, 1}));
  EXPECT_EQ(tasks[0].task.op, "conv2d");
  EXPECT_EQ(tasks[0].task.args.weight, (ops::Shape{64, 3, 7, 7}));
  EXPECT_EQ(tasks[1].task.op, "conv2d_winograd");
  EXPECT_EQ(tasks[1].task.args.winograd_tile, 4);
  EXPECT_EQ(tasks[1].task.args.oc_bn, target.vector_lanes());  // the graph's channel blocks
  EXPECT_EQ(tasks.back().task.op, "dense");
  // Fused epilogues are part of the task: the layer1 task is measured with
  // its bias and relu, and stands for the kernels ending in the residual add too.
  EXPECT_EQ(tasks[1].task.epilogue, "add + relu");
  const graph::Graph optimized = optimize_for_target(graph::load_model("resnet-18"), target);
  const std::string anchor_key = anchor_workload_key(optimized, optimized.find(tasks[1].nodes[0]).value());
  EXPECT_EQ(tasks[1].task.workload_key(), anchor_key);  // records filed under the anchor
  EXPECT_NE(tasks[1].task.workload.dag.workload_key(), anchor_key);
}

TEST_P(ExtractTasksPerWidth, MobileNetV2HasDepthwiseTasks) {
  const std::vector<NetworkTask> tasks = tasks_of("mobilenet-v2", target::Target::parse(GetParam()));
  const auto depthwise = std::count_if(tasks.begin(), tasks.end(), [](const NetworkTask& t) {
    return t.task.op == "depthwise_conv2d" && t.task.name() == "depthwise_conv2d_NCHWc.x86";
  });
  EXPECT_GE(depthwise, 5);
  int weights = 0;
  for (const NetworkTask& t : tasks) weights += t.weight;
  // 52 convolutions (17 of them depthwise) and the classifier, but blocks
  // 1-3 run each depthwise and its projection as one kernel that no
  // template tunes (graph::FuseOptions).
  EXPECT_EQ(weights, 52 + 1 - 2 * 3);
}

INSTANTIATE_TEST_SUITE_P(Targets, ExtractTasksPerWidth,
                         ::testing::Values("llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512"));

// On a GPU target with gpu_winograd (--convolutions winograd), ResNet-18's
// 3x3 stride-1 convolutions are the Winograd template's tasks (four shapes),
// the others the direct template's.
TEST(ExtractTasks, GpuWinogradConvolutionsAreTheWinogradTemplatesTasks) {
  const target::Target opencl = target::Target::parse("opencl");
  const std::vector<NetworkTask> tasks =
      extract_tasks(optimize_for_target(graph::load_model("resnet-18"), opencl, {}, true, false, false, true), opencl);
  std::map<std::string, int> templates;
  for (const NetworkTask& t : tasks) templates[t.task.name()] += t.weight;
  EXPECT_EQ(templates["conv2d_nchw_winograd.gpu"], 13);
  EXPECT_EQ(templates["conv2d_nchw.gpu"], 7);  // conv1, three strided 3x3, three 1x1 downsamples
  // Their weights are measured transformed, (alpha^2, O, C) for F(4x4, 3x3).
  for (const NetworkTask& t : tasks) {
    if (t.task.name() != "conv2d_nchw_winograd.gpu") continue;
    const auto& p = t.task.workload.dag.placeholders();
    EXPECT_TRUE(std::any_of(p.begin(), p.end(), [](const ir::Tensor& x) {
      return x->shape.size() == 3 && x->shape[0] == 36;
    })) << t.task.describe();
  }
}

// A record of each task's fallback config, as if measured.
std::vector<records::Record> fallback_records(const std::vector<NetworkTask>& tasks) {
  std::vector<records::Record> log;
  for (const NetworkTask& t : tasks) {
    measure::MeasureResult measured;
    measured.costs = {1e-4};
    log.push_back(autotvm::make_record(t.task, t.task.space.fallback(), measured));
  }
  return log;
}

// A --dtype float16 network on tensor cores' GPU (sm_90): every ungrouped
// convolution of at least 196 positions is a product (its tensor-core
// template where it can be; layer4's at 7 x 7 stay direct), each task
// measures its kernel as the half build stores it (the network's input and
// output in fp32, everything between in half) and files its records under a
// key of its own; a half build with records for those keys schedules every
// tunable kernel by them, an fp32 build none. Nothing is compiled.
TEST(ExtractTasks, HalfStorageTasksAreTheHalfKernelsUnderKeysOfTheirOwn) {
  const target::Target sm90 = target::Target::parse("cuda -arch=sm_90");
  const graph::Graph model = graph::load_model("resnet-18");
  const graph::Graph optimized =
      optimize_for_target(model, sm90, {}, true, false, implicit_gemm_of(BuildOptions{.half_storage = true}, sm90));
  const std::vector<NetworkTask> half = extract_tasks(optimized, sm90, true);
  const std::vector<NetworkTask> full = extract_tasks(optimized, sm90, false);
  ASSERT_EQ(half.size(), full.size());
  std::map<std::string, int> templates;
  for (size_t i = 0; i < half.size(); ++i) {
    const autotvm::Task& t = half[i].task;
    templates[t.name()] += half[i].weight;
    EXPECT_EQ(t.args.dtype, "float16") << t.describe();
    EXPECT_NE(t.describe().find("(float16 storage)"), std::string::npos) << t.describe();
    EXPECT_NE(t.workload_key(), full[i].task.workload_key()) << t.describe();
    EXPECT_EQ(full[i].task.args.dtype, "float32");
    // The image comes in as the network's fp32 input; the logits leave in fp32.
    for (const ir::Tensor& p : t.workload.dag.placeholders()) {
      const bool image = p->shape == ops::Shape{1, 3, 224, 224};
      EXPECT_EQ(image, i == 0 && p->shape.size() == 4 && p->shape[1] == 3 && p->shape[0] == 1) << t.describe();
      EXPECT_EQ(p->dtype, image ? ir::DType::Float32 : ir::DType::Float16) << p->name << " of " << t.describe();
    }
    EXPECT_EQ(t.workload.dag.outputs()[0]->dtype, t.name() == "dense.gpu" ? ir::DType::Float32 : ir::DType::Float16)
        << t.describe();
  }
  // On tensor cores, but for conv1, which reads the fp32 image, layer4's
  // direct convolutions, and the classifier, whose one row is no multiple of 16.
  EXPECT_EQ(templates["conv2d_nchw_implicit_gemm_tensorcore.cuda"], 14);
  EXPECT_EQ(templates["conv2d_nchw_implicit_gemm.gpu"], 1);
  EXPECT_EQ(templates["conv2d_nchw.gpu"], 5);
  EXPECT_EQ(templates["dense.gpu"], 1);

  records::ApplyHistoryBest history(fallback_records(half));
  std::ostringstream warnings;
  for (bool half_storage : {true, false}) {
    BuildOptions o{.history = &history, .warnings = &warnings, .compile = false, .half_storage = half_storage};
    const BuildResult built = build::build(model, sm90, o);
    int tuned = 0, tunable = 0, calls = 0;
    for (const KernelSummary& k : built.kernels) {
      tuned += k.tuned;
      tunable += !k.task_key.empty();
      calls += k.task_key.empty() ? 0 : k.calls;
    }
    EXPECT_EQ(calls, 21) << half_storage;  // the 20 convolutions and the classifier
    EXPECT_EQ(tuned, half_storage ? tunable : 0) << warnings.str();
  }
}

// ResNet-18 built in NHWC, in half on sm_90: every convolution is a product
// (ops/conv2d_implicit_gemm.h, positions x channels), on the NHWC
// tensor-core template but for conv1 (the fp32 image); a half build with the
// templates' fallback records for those tasks schedules every one of its
// 21 tunable calls by them. Nothing is compiled.
TEST(ExtractTasks, NhwcConvolutionsAreTheirTemplatesTasks) {
  const target::Target sm90 = target::Target::parse("cuda -arch=sm_90");
  const graph::Graph model = graph::load_model("resnet-18", graph::ModelOptions{1, "NHWC", {}, {}});
  const graph::Graph optimized =
      optimize_for_target(model, sm90, {}, true, false, implicit_gemm_of(BuildOptions{.half_storage = true}, sm90));
  const std::vector<NetworkTask> tasks = extract_tasks(optimized, sm90, true);
  std::map<std::string, int> templates;
  for (const NetworkTask& t : tasks) templates[t.task.name()] += t.weight;
  EXPECT_EQ(templates["conv2d_nhwc_implicit_gemm_tensorcore.cuda"], 19);
  EXPECT_EQ(templates["conv2d_nhwc_implicit_gemm.gpu"], 1);
  EXPECT_EQ(templates["dense.gpu"], 1);
  EXPECT_EQ(templates.size(), 3u);
  records::ApplyHistoryBest history(fallback_records(tasks));
  std::ostringstream warnings;
  const BuildResult built = build::build(
      model, sm90, BuildOptions{.history = &history, .warnings = &warnings, .compile = false, .half_storage = true});
  int tuned = 0;
  for (const KernelSummary& k : built.kernels) tuned += k.tuned ? k.calls : 0;
  EXPECT_EQ(tuned, 21) << warnings.str();
}

TEST(ExtractTasks, PrintsEachTaskAsTheSeedDoes) {
  const target::Target target = target::Target::parse("llvm -mcpu=haswell");
  const std::vector<NetworkTask> tasks = tasks_of("resnet-18", target);
  const std::string text = print_tasks(tasks);
  EXPECT_NE(text.find("========== Task 3 (workload key: " + tasks[3].task.workload_key() + ") =========="),
            std::string::npos);
  EXPECT_NE(text.find("weight 4 ("), std::string::npos);
  EXPECT_NE(text.find("conv2d_NCHWc(n, oc_chunk, oh, ow, oc_block) += "), std::string::npos);
  EXPECT_NE(text.find("T_relu("), std::string::npos);
}

// The model built with the best records of `log` (dispatch warnings into `warnings`).
BuildResult build_with_log(const graph::Graph& model, const target::Target& target, const std::string& log,
                           std::ostringstream& warnings) {
  records::ApplyHistoryBest history = records::ApplyHistoryBest::from_file(log, warnings);
  BuildOptions with_log;
  with_log.history = &history;
  with_log.warnings = &warnings;
  return build::build(model, target, with_log);
}

TEST(ExtractTasks, TunedNetworkBuiltFromTheLogMatchesTheInterpreter) {
  // PyTorch's resnet18 topology at a few channels (tests/data/onnx).
  const graph::Graph model = test::narrow_resnet18();
  target::Target target = target::Target::host();
  target.threads = 2;
  const std::vector<NetworkTask> tasks = extract_tasks(optimize_for_target(model, target), target);
  ASSERT_EQ(tasks.size(), 12u);

  const std::string log = "/tmp/tessera-network-tune-" + std::to_string(getpid()) + ".log";
  std::filesystem::remove(log);
  std::vector<autotvm::WeightedTask> weighted;
  for (const NetworkTask& t : tasks) weighted.push_back({&t.task, t.weight});
  autotvm::TuneTasksOptions options;
  options.tuner = "random";
  options.n_trial = 3;
  options.log = log;
  options.confirm_leaders = 0;
  options.seed = 5;  // random configs, so most kernels get a schedule other than the hand-written one
  measure::LocalBuilder builder;
  measure::LocalRunnerOptions run;
  run.num_threads = 2;
  measure::LocalRunner runner(run);
  std::ostringstream out, warnings;
  autotvm::tune_tasks(weighted, options, {&builder, &runner}, out, warnings);
  // Tuning measures each task's fallback (the hand-written tile) first; left
  // out, every kernel runs a config of the search.
  std::vector<records::Record> searched;
  for (const records::Record& r : records::load_records(log, warnings)) {
    const auto task = std::find_if(tasks.begin(), tasks.end(),
                                   [&](const NetworkTask& t) { return t.task.workload_key() == r.workload_key; });
    ASSERT_NE(task, tasks.end());
    if (r.config_index != task->task.space.fallback().index()) searched.push_back(r);
  }
  records::write_records(log, searched);

  std::ostringstream dispatch_warnings;
  BuildResult built = build_with_log(model, target, log, dispatch_warnings);
  // Every kernel of a tuned task takes a record, those whose epilogue differs
  // from their task's (the residual adds) included.
  int tunable = 0, tuned = 0;
  for (const KernelSummary& k : built.kernels) {
    tuned += k.tuned;
    tunable += k.name.find("conv2d") != std::string::npos || k.name.find("dense") != std::string::npos;
  }
  EXPECT_EQ(tuned, tunable) << dispatch_warnings.str();
  EXPECT_GE(tunable, 12);
  EXPECT_EQ(dispatch_warnings.str().find("is missing"), std::string::npos) << dispatch_warnings.str();

  test::expect_matches_interpreter(model, std::move(built));
  std::filesystem::remove(log);
}

TEST(ExtractTasks, BuildWarnsOncePerTaskWithoutARecordAndKeepsTheHandWrittenSchedule) {
  const graph::Graph model = test::narrow_resnet18();
  const target::Target target = target::Target::host();
  records::ApplyHistoryBest empty(std::vector<records::Record>{});
  std::ostringstream warnings;
  BuildOptions options;
  options.history = &empty;
  options.warnings = &warnings;
  const BuildResult built = build::build(model, target, options);
  for (const KernelSummary& k : built.kernels) EXPECT_FALSE(k.tuned) << k.name;
  const std::string text = warnings.str();
  size_t count = 0;
  for (size_t at = text.find("Config for target="); at != std::string::npos;
       at = text.find("Config for target=", at + 1))
    ++count;
  EXPECT_EQ(count, 12u) << text;  // one per task, not per kernel
  EXPECT_NE(text.find("A fallback configuration is used, which may bring great performance regression."),
            std::string::npos);
}

// ResNeXt's bottleneck at a few channels: 1x1, a grouped 3x3 (2 groups of
// 16 channels: no narrower than a block of any target, so not merged into
// wider groups), 1x1, the residual add.
graph::Graph grouped_bottleneck() {
  graph::GraphBuilder b(11);
  const graph::NodeId x = b.input("data", {1, 32, 10, 10});
  graph::NodeId y = b.conv2d(x, b.random_constant("a.w", {32, 32, 1, 1}, -0.2f, 0.2f), ops::Conv2dAttrs::symmetric(1, 0),
                             "a");
  y = b.relu(y, "a.relu");
  y = b.conv2d(y, b.random_constant("b.w", {32, 16, 3, 3}, -0.2f, 0.2f), ops::Conv2dAttrs::symmetric(1, 1, 1, 2), "b");
  y = b.relu(y, "b.relu");
  y = b.conv2d(y, b.random_constant("c.w", {32, 32, 1, 1}, -0.2f, 0.2f), ops::Conv2dAttrs::symmetric(1, 0), "c");
  return b.finish({b.relu(b.add(y, x, "residual"), "out")});
}

TEST(ExtractTasks, AGroupedConvolutionIsATaskWhoseTunedKernelMatchesTheInterpreter) {
  const graph::Graph model = grouped_bottleneck();
  target::Target target = target::Target::host();
  target.threads = 2;
  const std::vector<NetworkTask> tasks = extract_tasks(optimize_for_target(model, target), target);
  const auto grouped =
      std::find_if(tasks.begin(), tasks.end(), [](const NetworkTask& t) { return t.task.op == "group_conv2d"; });
  ASSERT_NE(grouped, tasks.end()) << print_tasks(tasks);
  EXPECT_EQ(grouped->task.name(), "conv2d_NCHWc.x86");
  EXPECT_EQ(grouped->task.args.groups, 2);
  EXPECT_EQ(grouped->task.args.weight, (ops::Shape{32, 16, 3, 3}));
  EXPECT_EQ(16 % grouped->task.args.ic_bn, 0);  // blocks within a group
  EXPECT_EQ(grouped->task.epilogue, "relu");

  // Its log holds searched configs only (not the fallback), so the build
  // runs a schedule the tuner chose.
  const std::string log = "/tmp/tessera-group-tune-" + std::to_string(getpid()) + ".log";
  std::filesystem::remove(log);
  autotvm::TuneTasksOptions options;
  options.tuner = "random";
  options.n_trial = 4;
  options.log = log;
  options.confirm_leaders = 0;
  options.seed = 3;
  measure::LocalBuilder builder;
  measure::LocalRunner runner(measure::LocalRunnerOptions{.num_threads = 2});
  std::ostringstream out, warnings;
  autotvm::tune_tasks({{&grouped->task, 1}}, options, {&builder, &runner}, out, warnings);
  std::vector<records::Record> searched;
  for (const records::Record& r : records::load_records(log, warnings))
    if (r.config_index != grouped->task.space.fallback().index() && r.valid()) searched.push_back(r);
  ASSERT_FALSE(searched.empty()) << out.str();
  records::write_records(log, searched);

  std::ostringstream dispatch_warnings;
  BuildResult built = build_with_log(model, target, log, dispatch_warnings);
  const auto tuned = std::count_if(built.kernels.begin(), built.kernels.end(), [](const KernelSummary& k) { return k.tuned; });
  EXPECT_EQ(tuned, 1) << dispatch_warnings.str();
  test::expect_matches_interpreter(model, std::move(built));
  std::filesystem::remove(log);
}

}  // namespace
}  // namespace tessera::driver
