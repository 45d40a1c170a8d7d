// tune --quantize int8: the network compile --quantize builds (the same
// calibration) has its int8 convolutions as tasks of the template
// qlinear_conv2d_NCHWc.x86, layers of one shape sharing one task whatever
// their scales; tuned into a log, compile --quantize --records takes a
// record for every int8 kernel, and the network computes what the
// hand-written schedules compute, value for value (the int8 kernels are
// exact whatever their schedule).
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
#include "measure/builder.h"
#include "measure/runner.h"
#include "ops/qlinear_conv2d.h"
#include "records/log_file.h"
#include "runtime/graph_executor.h"
#include "runtime/thread_pool.h"

namespace tessera::driver {
namespace {

runtime::NDArray run(build::BuildResult built, const runtime::NDArray& x) {
  runtime::GraphExecutor ex(std::move(built.artifact), "quantized");
  ex.set_input(0, x);
  ex.run();
  return ex.get_output(0);
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

  CompileOptions o;
  o.shipped_records = false;
  o.quantize = "int8";
  o.calibrate = "2";
  o.warnings = &notes;
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

  runtime::set_num_threads(2);
  runtime::NDArray x(model.node(model.input_ids()[0]).type.shape);
  x.fill_random(9);
  const runtime::NDArray want = run(std::move(untuned), x);
  const runtime::NDArray got = run(std::move(tuned), x);
  ASSERT_EQ(want.size(), got.size());
  for (int64_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
  std::filesystem::remove(log);
}

}  // namespace
}  // namespace tessera::driver
