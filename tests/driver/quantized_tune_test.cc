// tune --quantize int8: the network compile --quantize builds (the same
// calibration) has its int8 convolutions as tasks of the template
// qlinear_conv2d_NCHWc.x86, layers of one shape sharing one task whatever
// their scales; tuned into a log, compile --quantize --records takes a
// record for every int8 kernel, and the network computes what the
// hand-written schedules compute, value for value (the int8 kernels are
// exact whatever their schedule). The same with the auto-scheduler, whose
// int8 sketches keep the byte dot product. The graph tuner chooses the int8
// convolutions' channel blocks as it chooses float ones'.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "autotvm/tune_tasks.h"
#include "compile/build.h"
#include "compile/network_check.h"
#include "driver/compile.h"
#include "driver/extract_tasks.h"
#include "driver/graph_tuner.h"
#include "compile/graph_choices.h"
#include "records/apply_history_best.h"
#include "driver/tune_network.h"
#include "measure/builder.h"
#include "measure/runner.h"
#include "ops/qlinear_conv2d.h"
#include "records/log_file.h"
#include "runtime/graph_executor.h"
#include "runtime/thread_pool.h"

namespace tessera::driver {
namespace {

// compile --quantize int8 --calibrate 2 without shipped records.
CompileOptions quantized_compile(std::ostream& notes) {
  CompileOptions o;
  o.shipped_records = false;
  o.quantize = "int8";
  o.calibrate = "2";
  o.warnings = &notes;
  return o;
}

runtime::NDArray run(build::BuildResult built, const runtime::NDArray& x) {
  runtime::GraphExecutor ex(std::move(built.artifact), "quantized");
  ex.set_input(0, x);
  ex.run();
  return ex.get_output(0);
}

// Both builds of `model` on one seeded input, at 2 threads: the same values, exactly.
void expect_same_values(const graph::Graph& model, build::BuildResult untuned, build::BuildResult tuned) {
  runtime::set_num_threads(2);
  runtime::NDArray x(model.node(model.input_ids()[0]).type.shape);
  x.fill_random(9);
  const runtime::NDArray want = run(std::move(untuned), x);
  const runtime::NDArray got = run(std::move(tuned), x);
  ASSERT_EQ(want.size(), got.size());
  for (int64_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
}

TEST(QuantizedTune, Int8ConvolutionsAreSharedTasksAndTheirRecordsCompileToTheSameValues) {
  const graph::Graph model = build::test::narrow_resnet18();
  target::Target target = target::Target::host();
  target.threads = 2;
  std::ostringstream notes;
  const graph::Graph quantized = quantize_model(model, target, "int8", "2", {}, notes);
  const graph::Graph optimized = build::optimize_for_target(quantized, target, {}, false, false);
  const std::vector<NetworkTask> tasks = extract_tasks(optimized, target);
  std::vector<autotvm::WeightedTask> int8_tasks;
  int shared = 0;
  for (const NetworkTask& t : tasks) {
    if (t.task.tmpl->name != "qlinear_conv2d_NCHWc.x86") continue;
    int8_tasks.push_back({&t.task, t.weight});
    if (t.weight < 2) continue;
    // Its layers' quantizations differ, yet they are one task.
    std::set<float> scales;
    for (const std::string& name : t.nodes)
      scales.insert(optimized.node(*optimized.find(name)).attrs_as<ops::QLinearConv2dAttrs>().y_scale);
    EXPECT_GT(scales.size(), 1u) << t.task.describe();
    ++shared;
  }
  EXPECT_GE(int8_tasks.size(), 5u);
  EXPECT_GE(shared, 1);

  const std::string log = "/tmp/tessera-quantized-tune-" + std::to_string(getpid()) + ".log";
  std::filesystem::remove(log);
  autotvm::TuneTasksOptions options;
  options.tuner = "random";
  options.n_trial = 3;
  options.log = log;
  options.confirm_leaders = 0;
  options.seed = 3;
  measure::LocalBuilder builder;
  measure::LocalRunnerOptions runs;
  runs.num_threads = 2;
  measure::LocalRunner runner(runs);
  std::ostringstream out, warnings;
  autotvm::tune_tasks(int8_tasks, options, {&builder, &runner}, out, warnings);
  EXPECT_GE(records::load_records(log, warnings).size(), int8_tasks.size());

  CompileOptions o = quantized_compile(notes);
  build::BuildResult untuned = compile(model, target, o);
  o.records = {log};
  build::BuildResult tuned = compile(model, target, o);
  int int8_kernels = 0, int8_tuned = 0;
  for (const build::KernelSummary& k : tuned.kernels) {
    const bool int8 =
        k.name.find("qlinear_conv2d") != std::string::npos && k.name.find("depthwise") == std::string::npos;
    int8_kernels += int8;
    int8_tuned += int8 && k.tuned;
  }
  EXPECT_GT(int8_kernels, 0);
  EXPECT_EQ(int8_tuned, int8_kernels) << notes.str();

  expect_same_values(model, std::move(untuned), std::move(tuned));
  std::filesystem::remove(log);
}

TEST(QuantizedTune, AutoScheduledInt8KernelsKeepTheByteDotProductAndTheirValues) {
  const graph::Graph model = build::test::narrow_resnet18();
  target::Target target = target::Target::host();
  target.threads = 2;
  const std::string log = "/tmp/tessera-quantized-auto-" + std::to_string(getpid()) + ".log";
  std::filesystem::remove(log);
  TuneOptions o;
  o.log = log;
  o.search = "auto";
  o.trials = 2;  // the hand-written schedule, then one sketch's candidate
  o.quantize = "int8";
  o.calibrate = "2";
  o.confirm_leaders = 0;
  o.evaluate = false;
  o.seed = 4;
  std::ostringstream out, notes;
  const TuneResult tuned_run = tune_network(model, target, o, out, notes);
  EXPECT_GT(tuned_run.tasks, 5) << out.str();
  // Every int8 convolution's sketch candidates compute with the dot product.
  int int8_candidates = 0;
  for (const records::Record& r : records::load_records(log, notes)) {
    if (r.trace.dump().find("qlinear_conv2d_NCHWc") == std::string::npos || !r.valid()) continue;
    ++int8_candidates;
    EXPECT_NE(r.trace.dump().find("dot_product"), std::string::npos) << r.trace.dump();
  }
  EXPECT_GT(int8_candidates, 5) << out.str();

  CompileOptions c = quantized_compile(notes);
  build::BuildResult untuned = compile(model, target, c);
  c.records = {log};
  build::BuildResult tuned = compile(model, target, c);
  int int8_tuned = 0;
  for (const build::KernelSummary& k : tuned.kernels)
    int8_tuned += k.tuned && k.name.find("qlinear_conv2d") != std::string::npos;
  EXPECT_GT(int8_tuned, 0) << notes.str();

  expect_same_values(model, std::move(untuned), std::move(tuned));
  std::filesystem::remove(log);
}

// The names of the blocked int8 convolutions (not depthwise) of a build.
std::vector<std::string> int8_conv_names(const graph::Graph& optimized) {
  std::vector<std::string> names;
  for (const graph::Node& n : optimized.nodes())
    if (graph::op_name(n.op) == "qlinear_conv2d" && !n.attrs_as<ops::QLinearConv2dAttrs>().is_depthwise())
      names.push_back(n.name);
  return names;
}

TEST(QuantizedTune, TheGraphTunerChoosesInt8BlocksAndTheyComputeTheSameValues) {
  const graph::Graph model = build::test::narrow_resnet18();
  target::Target target = target::Target::host();
  target.threads = 1;
  graph::QuantizeOptions every_layer;
  every_layer.skip_layers = {};  // all integer: any blocks give the same values, exactly
  std::ostringstream notes;
  const graph::Graph quantized = quantize_model(model, target, "int8", "2", every_layer, notes);
  const std::vector<std::string> names = int8_conv_names(build::optimize_for_target(quantized, target));
  ASSERT_GE(names.size(), 15u);

  measure::LocalBuilder builder;
  measure::LocalRunner runner;
  GraphTunerOptions options;
  options.builder = &builder;
  options.runner = &runner;
  options.rounds = 1;
  options.winograd = false;
  std::ostringstream out;
  const GraphTunerResult r = tune_graph(quantized, target, {}, options, out);
  for (const std::string& name : names) EXPECT_TRUE(r.conv_blocks.contains(name)) << name << "\n" << out.str();
  EXPECT_GT(r.transforms_measured, 0);
  EXPECT_LE(r.chosen_seconds, r.default_seconds);
  EXPECT_EQ(build::graph_choices(r.records), r.conv_blocks);

  runtime::set_num_threads(1);
  runtime::NDArray x(model.node(model.input_ids()[0]).type.shape);
  x.fill_random(5);
  const runtime::NDArray want = run(build::build(quantized, target, {}), x);
  // Every convolution reading blocks of 8 and writing blocks of 4 (both
  // divide every width of the network; the stem's 3 channels are widened to
  // one lane of 4): a transform of bytes on every data path. Then the
  // tuner's choice with its records.
  build::BuildOptions mixed;
  for (const std::string& name : names) mixed.conv_blocks[name] = {8, 4};
  mixed.conv_blocks[names[0]].ic_bn = 4;
  build::BuildResult mixed_build = build::build(quantized, target, mixed);
  int transforms = 0;
  for (const graph::Node& n : mixed_build.optimized.nodes()) transforms += n.op == graph::Op::kLayoutTransform;
  EXPECT_GE(transforms, 10);
  records::ApplyHistoryBest history(r.records);
  build::BuildOptions chosen;
  chosen.history = &history;
  chosen.conv_blocks = build::graph_choices(r.records);
  std::vector<build::BuildResult> builds;
  builds.push_back(std::move(mixed_build));
  builds.push_back(build::build(quantized, target, chosen));
  for (build::BuildResult& built : builds) {
    const runtime::NDArray got = run(std::move(built), x);
    ASSERT_EQ(want.size(), got.size());
    for (int64_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
  }
}

}  // namespace
}  // namespace tessera::driver
