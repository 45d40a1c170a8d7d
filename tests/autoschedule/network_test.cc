// The auto-scheduler over a whole (small) network: every kernel of the
// build is a task, the task scheduler spends a few real measurements on
// each, and the network built with the log's best schedules still computes
// what the reference interpreter computes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <sstream>

#include "autoschedule/search_task.h"
#include "autoschedule/task_scheduler.h"
#include "compile/build.h"
#include "driver/extract_tasks.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "measure/kernel_args.h"
#include "records/apply_history_best.h"
#include "runtime/graph_executor.h"
#include "runtime/thread_pool.h"

namespace tessera::autoschedule {
namespace {

graph::Graph small_network() {
  graph::GraphBuilder b(3);
  graph::NodeId x = b.input("data", {1, 8, 10, 10});
  graph::NodeId y = b.conv2d(x, b.random_constant("c1", {16, 8, 3, 3}, -0.3f, 0.3f),
                             graph::Conv2dAttrs::symmetric(1, 1), "conv1");
  y = b.relu(y, "relu1");
  graph::NodeId dw = b.conv2d(y, b.random_constant("dw", {16, 1, 3, 3}, -0.5f, 0.5f),
                              graph::Conv2dAttrs::symmetric(1, 1, 1, 16), "depthwise");
  graph::NodeId pw = b.conv2d(dw, b.random_constant("pw", {16, 16, 1, 1}, -0.3f, 0.3f),
                              graph::Conv2dAttrs::symmetric(1, 0), "pointwise");
  y = b.relu(b.add(pw, y, "residual"), "relu2");
  y = b.global_avg_pool2d(y, "NCHW", "gap");
  y = b.flatten(y, 1, "flatten");
  y = b.dense(y, b.random_constant("fc.weight", {10, 16}, -0.3f, 0.3f), "fc");
  return b.finish({b.softmax(y, -1, "softmax")});
}

TEST(AutoscheduleNetwork, TunedKernelsBuildANetworkThatMatchesTheInterpreter) {
  const graph::Graph g = small_network();
  target::Target target = target::Target::host();
  target.threads = 2;
  const auto tasks = driver::extract_auto_tasks(g, target, build::BuildOptions{.winograd = false});
  ASSERT_GE(tasks.size(), 4u);

  const std::string log = (std::filesystem::temp_directory_path() /
                           ("tessera_autoschedule_network_" + std::to_string(getpid()) + ".log")).string();
  std::filesystem::remove(log);
  {
    measure::LocalBuilder builder;
    measure::LocalRunner runner(measure::LocalRunnerOptions{.number = 1, .repeat = 1, .num_threads = 2});
    records::RecordWriter writer(log);
    XgbStoreCostModel model;
    EvolutionOptions evolution{.population = 32, .generations = 2};
    std::vector<std::unique_ptr<TaskSearch>> searches;
    std::vector<ScheduledTask> scheduled;
    for (const auto& t : tasks) {
      searches.push_back(std::make_unique<TaskSearch>(SearchTask{t.name, t.dag, target, {}}, model,
                                                      SearchOptions{.evolution = evolution}, builder, runner, writer));
      scheduled.push_back({searches.back().get(), static_cast<double>(t.weight), t.dag.flop_count(), t.tag});
    }
    TaskSchedulerOptions options;
    options.total_trials = 4 * static_cast<int64_t>(tasks.size());
    options.trials_per_round = 4;
    TaskScheduler scheduler(std::move(scheduled), options);
    std::ostringstream table;
    scheduler.tune(table);
    EXPECT_EQ(scheduler.total_trials(), options.total_trials);
    EXPECT_TRUE(std::isfinite(scheduler.estimated_latency())) << table.str();
  }

  std::ostringstream warnings;
  records::ApplyHistoryBest history = records::ApplyHistoryBest::from_file(log, warnings);
  build::BuildOptions options;
  options.history = &history;
  options.winograd = false;
  options.warnings = &warnings;
  build::BuildResult built = build::build(g, target, options);
  int tuned = 0;
  for (const auto& k : built.kernels) tuned += k.tuned;
  EXPECT_EQ(tuned, static_cast<int>(built.kernels.size())) << "every kernel takes its auto-scheduled record";

  std::vector<runtime::NDArray> inputs;
  inputs.emplace_back(g.node(g.input_ids()[0]).type.shape);
  inputs.back().fill_random(5);
  const runtime::NDArray& x = inputs.back();
  const auto want = graph::interpret(g, inputs);
  runtime::GraphExecutor ex(std::move(built.artifact), "auto");
  runtime::set_num_threads(2);
  ex.set_input(0, x);
  ex.run();
  runtime::set_num_threads(0);
  const auto cmp = measure::compare_output(ex.get_output(0), want[0]);
  EXPECT_TRUE(cmp.ok) << cmp.describe();
  std::filesystem::remove(log);
}

}  // namespace
}  // namespace tessera::autoschedule
