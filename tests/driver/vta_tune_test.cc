// Tuning for VTA: the seed's flow on a small ResNet (random and xgb tuners
// over conv2d_packed.vta, cost = simulated time), every trial logged with
// the simulator's time, a second call resuming instead of measuring again,
// and the compiled network taking the log's best configs: each packed
// kernel tuned, its program as fast as its best record says, the network's
// cycles fewer than with the fallbacks. Measuring alone: a config that
// does not fit the accelerator is an instantiation error, one that fits
// costs what the simulator says.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "autotvm/vta/conv2d_packed.h"
#include "driver/compile.h"
#include "driver/tune_network.h"
#include "measure/vta_measure.h"
#include "records/log_file.h"
#include "runtime/graph_executor.h"
#include "tessera/error.h"
#include "testing/small_resnet.h"
#include "vta/simulator.h"

namespace tessera::driver {
namespace {

std::string temp_log(const std::string& name) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::filesystem::remove(path);
  return path;
}

int64_t simulated_cycles(build::BuildResult built, int* tuned) {
  *tuned = 0;
  for (const build::KernelSummary& k : built.kernels) *tuned += k.tuned && k.accelerator;
  runtime::GraphExecutor ex(std::move(built.artifact), "vta");
  ex.set_random_inputs();
  ex.run();
  int64_t cycles = 0;
  for (size_t i = 0; i < ex.graph().calls.size(); ++i)
    if (ex.is_accelerator_call(i)) cycles += ex.accelerator_stats()[i].cycles;
  return cycles;
}

TEST(VtaTune, TheSeedsFlowTunesLogsResumesAndCompilesTheBest) {
  const target::Target target = target::Target::parse("vta");
  const graph::Graph model = testing::small_resnet();
  TuneOptions o;
  o.log = temp_log("tessera_vta_tune.log");
  o.tuner = "random";
  o.trials = 24;
  o.early_stopping = 0;
  o.evaluate = true;
  std::ostringstream out, warnings;
  const TuneResult first = tune_network(model, target, o, out, warnings);
  // Block 1's two convolutions (one with its residual), block 2's first, its
  // second with the shortcut's, the downsampling one: one task each.
  EXPECT_EQ(first.tasks, 5) << out.str();
  EXPECT_EQ(first.tuned, 5);
  EXPECT_EQ(first.trials, 5 * 24);
  EXPECT_NE(out.str().find("[Task  5/ 5]"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("Network with its kernels tuned:"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("5 of 5 VTA kernels tuned"), std::string::npos) << out.str();

  std::ostream quiet(nullptr);
  const std::vector<records::Record> log = records::load_records(o.log, quiet);
  int valid = 0;
  for (const records::Record& r : log) {
    EXPECT_EQ(r.task_name, "conv2d_packed.vta");
    EXPECT_EQ(r.workload_key.substr(0, 4), "vta-");
    valid += r.valid();
  }
  EXPECT_GE(static_cast<int>(log.size()), 5 * 24);
  EXPECT_GT(valid, 5 * 12);  // most configs of these small layers fit

  // Compiled with the log: every packed kernel takes its best, and the
  // network's cycles drop below the fallbacks'.
  CompileOptions c;
  c.shipped_records = false;
  c.warnings = &quiet;
  int tuned = 0, untuned = 0;
  const int64_t fallback_cycles = simulated_cycles(compile(model, target, c), &untuned);
  c.records = {o.log};
  const int64_t tuned_cycles = simulated_cycles(compile(model, target, c), &tuned);
  EXPECT_EQ(untuned, 0);
  EXPECT_EQ(tuned, 5);
  EXPECT_LT(tuned_cycles, fallback_cycles);

  // Again: the log shows every task finished; nothing is measured twice.
  std::ostringstream again;
  o.evaluate = false;
  const TuneResult second = tune_network(model, target, o, again, warnings);
  EXPECT_EQ(second.already_done, 5) << again.str();
  EXPECT_EQ(second.trials, 0);
  // The xgb tuner learns from the knobs (VTA's programs have no loops to read).
  o.log = temp_log("tessera_vta_tune_xgb.log");
  o.tuner = "xgb";
  o.trials = 40;
  std::ostringstream xgb;
  EXPECT_EQ(tune_network(model, target, o, xgb, warnings).trials, 5 * 40) << xgb.str();
  o.tuner = "xgb_itervar";
  EXPECT_THROW(tune_network(model, target, o, xgb, warnings), Error);
}

TEST(VtaMeasure, AConfigThatDoesNotFitIsAnInstantiationErrorAndOneThatFitsCostsItsCycles) {
  ops::Conv2dPackedAttrs a;
  a.in_channels = a.out_channels = 64, a.height = a.width = 14, a.kernel_h = a.kernel_w = 3, a.pad_h = a.pad_w = 1;
  a.bias = true, a.shift = 8;
  const autotvm::Task task = autotvm::vta::conv2d_packed_task(a, target::Target::parse("vta"));
  EXPECT_EQ(task.flop(), a.flop());
  const autotvm::ConfigEntity fits = task.space.fallback();
  // tile_h 5 divides no 14 rows.
  autotvm::ConfigEntity misfit = fits;
  for (int64_t i = 0; i < task.space.size(); ++i) {
    const autotvm::ConfigEntity c = task.space.get(i);
    if (!tessera::vta::conv2d_packed_misfit(a, autotvm::vta::conv2d_packed_schedule(c), {}).empty()) {
      misfit = c;
      break;
    }
  }
  measure::VtaBuilder builder;
  measure::VtaRunner runner(2);
  const std::vector<measure::MeasureInput> inputs = {task.measure_input(fits), task.measure_input(misfit)};
  const std::vector<measure::BuildResult> builds = builder.build(inputs);
  const std::vector<measure::MeasureResult> results = runner.run(inputs, builds);
  ASSERT_TRUE(results[0].valid()) << results[0].error_message;
  EXPECT_EQ(results[0].costs.size(), 2u);
  // The cost is the simulated time of the program the config gives.
  const tessera::vta::VtaConfig config;
  tessera::vta::Program p = tessera::vta::lower_conv2d_packed(a, autotvm::vta::conv2d_packed_schedule(fits), config);
  const int64_t cycles = tessera::vta::Simulator(config).run(p.instructions, p.dram).cycles;
  EXPECT_DOUBLE_EQ(results[0].costs[0], config.seconds(cycles));
  EXPECT_EQ(results[1].error, measure::ErrorKind::Instantiation);
  EXPECT_FALSE(results[1].error_message.empty());
}

}  // namespace
}  // namespace tessera::driver
