#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <memory>

#include "measure/runner.h"
#include "measure_test_util.h"
#include "runtime/thread_pool.h"
#include "tessera/error.h"

namespace tessera::measure {
namespace {

// One build of the add kernel, shared by the tests of this file (building is
// the slow part, and the runner never modifies the object).
class MeasureLocalRunner : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    builder_ = std::make_unique<LocalBuilder>();
    build_ = builder_->build({input()})[0];
  }
  static void TearDownTestSuite() { builder_.reset(); }  // removes the object files
  static MeasureInput input() { return {testing::add_dag(), schedule::Trace()}; }
  void SetUp() override { ASSERT_EQ(build_.error, ErrorKind::None) << build_.error_message; }

  static std::unique_ptr<LocalBuilder> builder_;
  static BuildResult build_;
};
std::unique_ptr<LocalBuilder> MeasureLocalRunner::builder_;
BuildResult MeasureLocalRunner::build_;

void expect_measured(const MeasureResult& r, int repeat) {
  EXPECT_EQ(r.error, ErrorKind::None) << r.error_message;
  ASSERT_EQ(r.costs.size(), static_cast<size_t>(repeat));
  for (double c : r.costs) EXPECT_GT(c, 0);
  EXPECT_GT(r.all_cost, 0);
  EXPECT_GT(r.timestamp, 1.6e9);
}

TEST_F(MeasureLocalRunner, SegfaultBecomesErrorAndNextCandidateRuns) {
  LocalRunner runner({.repeat = 2, .timeout = 5});
  runner.set_fault_hook_for_testing([](int index) {
    if (index == 0) std::raise(SIGSEGV);
  });
  auto dag_input = input();
  auto results = runner.run({dag_input, dag_input}, {build_, build_});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].error, ErrorKind::RuntimeDevice);
  EXPECT_NE(results[0].error_message.find("SIGSEGV"), std::string::npos) << results[0].error_message;
  EXPECT_TRUE(results[0].costs.empty());
  expect_measured(results[1], 2);
}

TEST_F(MeasureLocalRunner, HangBecomesRunTimeoutAndNextCandidateRuns) {
  const double timeout = 1;
  LocalRunner runner({.repeat = 2, .timeout = timeout});
  runner.set_fault_hook_for_testing([](int index) {
    if (index == 1)
      for (;;) pause();
  });
  auto dag_input = input();
  auto results = runner.run({dag_input, dag_input, dag_input}, {build_, build_, build_});
  ASSERT_EQ(results.size(), 3u);
  expect_measured(results[0], 2);
  EXPECT_EQ(results[1].error, ErrorKind::RunTimeout) << results[1].error_message;
  EXPECT_LT(results[1].all_cost - build_.time_cost, timeout + 5.0);  // killed, not waited for
  expect_measured(results[2], 2);
}

TEST_F(MeasureLocalRunner, ReapsEveryChildAndClosesEveryPipe) {
  int fds_before = testing::count_open_fds();
  LocalRunner runner({.repeat = 1, .timeout = 1});
  runner.set_fault_hook_for_testing([](int index) {
    if (index == 0) std::raise(SIGSEGV);
    if (index == 1)
      for (;;) pause();
  });
  auto dag_input = input();
  runner.run({dag_input, dag_input, dag_input}, {build_, build_, build_});
  EXPECT_TRUE(testing::has_no_children());
  EXPECT_EQ(testing::count_open_fds(), fds_before);
}

TEST_F(MeasureLocalRunner, CorrectKernelPassesTheCheck) {
  LocalRunner runner({.repeat = 3, .check_correctness = true}, testing::add_reference());
  auto results = runner.run({input()}, {build_});
  expect_measured(results[0], 3);
}

TEST_F(MeasureLocalRunner, WrongReferenceIsWrongAnswer) {
  LocalRunner runner({.check_correctness = true}, testing::add_reference(/*offset=*/1));
  auto results = runner.run({input()}, {build_});
  EXPECT_EQ(results[0].error, ErrorKind::WrongAnswer);
  EXPECT_NE(results[0].error_message.find("max abs error 1"), std::string::npos)
      << results[0].error_message;
  EXPECT_NE(results[0].error_message.find("first mismatch at 0"), std::string::npos)
      << results[0].error_message;
  EXPECT_TRUE(results[0].costs.empty());
}

TEST_F(MeasureLocalRunner, BuildErrorPassesThroughWithoutRunning) {
  BuildResult failed;
  failed.error = ErrorKind::Instantiation;
  failed.error_message = "no stage named 'X'";
  failed.time_cost = 0.25;
  LocalRunner runner;
  runner.set_fault_hook_for_testing([](int) { std::raise(SIGSEGV); });  // never reached
  auto results = runner.run({input()}, {failed});
  EXPECT_EQ(results[0].error, ErrorKind::Instantiation);
  EXPECT_EQ(results[0].error_message, "no stage named 'X'");
  EXPECT_DOUBLE_EQ(results[0].all_cost, 0.25);
}

TEST_F(MeasureLocalRunner, CacheFlushAndMinRepeatMsStillMeasure) {
  LocalRunner runner({.number = 2,
                      .repeat = 2,
                      .min_repeat_ms = 2,
                      .enable_cpu_cache_flush = true,
                      .check_correctness = true,
                      .num_threads = 1},
                     testing::add_reference());
  auto results = runner.run({input()}, {build_});
  expect_measured(results[0], 2);
}

TEST_F(MeasureLocalRunner, MissingObjectFileIsRuntimeError) {
  BuildResult missing = build_;
  missing.object_path = builder_->build_dir() + "/does-not-exist.o";
  LocalRunner runner;
  auto results = runner.run({input()}, {missing});
  EXPECT_EQ(results[0].error, ErrorKind::RuntimeDevice);
  EXPECT_NE(results[0].error_message.find("does-not-exist.o"), std::string::npos)
      << results[0].error_message;
}

TEST(MeasureLocalRunnerThreads, ParallelKernelRunsAfterParentUsedItsThreadPool) {
  // The parent's pool threads do not survive fork; the child must build its own.
  std::atomic<int64_t> iterations{0};
  runtime::set_num_threads(2);
  runtime::parallel_for(
      [](void* counter, int64_t begin, int64_t end) {
        *static_cast<std::atomic<int64_t>*>(counter) += end - begin;
      },
      &iterations, 100);
  runtime::set_num_threads(0);  // back to the default for the other tests
  ASSERT_EQ(iterations.load(), 100);

  LocalBuilder builder;
  MeasureInput parallel_input{testing::add_dag(),
                              schedule::Trace().split("C", "i", {4}).parallel("C", "i.0")};
  LocalRunner runner({.repeat = 2, .check_correctness = true, .num_threads = 2},
                     testing::add_reference());
  auto results = measure_batch(builder, runner, {parallel_input});
  expect_measured(results[0], 2);
}

TEST(MeasureBatch, BuildsAndRunsInInputOrder) {
  LocalBuilder builder;
  LocalRunner runner({.repeat = 1, .check_correctness = true}, testing::add_reference());
  std::vector<MeasureInput> inputs = {
      {testing::add_dag(), schedule::Trace().split("missing", "i", {2})},
      {testing::add_dag(), schedule::Trace()},
  };
  auto results = measure_batch(builder, runner, inputs);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].error, ErrorKind::Instantiation);
  expect_measured(results[1], 1);
}

// Notes the order in which it sees candidates (by their trace's split length)
// and returns that length as the cost.
class OrderRunner : public Runner {
 public:
  std::vector<MeasureResult> run(const std::vector<MeasureInput>& inputs, const std::vector<BuildResult>& builds) override {
    std::vector<MeasureResult> out;
    std::vector<int64_t> order;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto& split = std::get<schedule::SplitStep>(inputs[i].trace.steps().at(0));
      order.push_back(split.lengths.at(0));
      MeasureResult r;
      r.costs = {static_cast<double>(split.lengths.at(0))};
      r.all_cost = builds[i].time_cost;
      out.push_back(r);
    }
    orders.push_back(order);
    return out;
  }
  std::vector<std::vector<int64_t>> orders;
};

class CountingBuilder : public Builder {
 public:
  std::vector<BuildResult> build(const std::vector<MeasureInput>& inputs) override {
    ++calls;
    std::vector<BuildResult> b(inputs.size());
    for (auto& r : b) r.time_cost = 1;
    return b;
  }
  int calls = 0;
};

TEST(MeasureRounds, BuildsOnceAndRotatesTheOrderEachRound) {
  std::vector<MeasureInput> inputs;
  for (int64_t len : {1, 2, 4}) inputs.push_back({testing::add_dag(), schedule::Trace().split("C", "i", {len})});
  CountingBuilder builder;
  OrderRunner runner;
  auto rounds = measure_rounds(builder, runner, inputs, 4);
  EXPECT_EQ(builder.calls, 1);
  const std::vector<std::vector<int64_t>> want = {{1, 2, 4}, {2, 4, 1}, {4, 1, 2}, {1, 2, 4}};
  EXPECT_EQ(runner.orders, want);
  ASSERT_EQ(rounds.size(), 4u);
  for (size_t r = 0; r < rounds.size(); ++r) {
    ASSERT_EQ(rounds[r].size(), 3u);
    // Results come back in input order whatever order they ran in.
    EXPECT_EQ(rounds[r][0].costs.at(0), 1);
    EXPECT_EQ(rounds[r][1].costs.at(0), 2);
    EXPECT_EQ(rounds[r][2].costs.at(0), 4);
    EXPECT_EQ(rounds[r][0].all_cost, r == 0 ? 1 : 0);  // the build is paid in round 0 only
  }
}

// Options that would leave every result without costs (or fail them all)
// are refused before anything is measured, so no log fills with results
// that a rerun would take for measured configs.
TEST(MeasureOptions, RunnerAndBuilderRefuseOptionsThatMeasureNothing) {
  for (auto bad : std::vector<LocalRunnerOptions>{{.number = 0},
                                                  {.repeat = 0},
                                                  {.min_repeat_ms = -5},
                                                  {.timeout = 0},
                                                  {.timeout = -1},
                                                  {.timeout = std::nan("")}}) {
    EXPECT_THROW(LocalRunner{bad}, Error);
  }
  EXPECT_NO_THROW(LocalRunner{LocalRunnerOptions{}});
  EXPECT_THROW(LocalBuilder(LocalBuilderOptions{.timeout = 0}), Error);
  EXPECT_THROW(LocalBuilder(LocalBuilderOptions{.n_parallel = -1}), Error);
}

}  // namespace
}  // namespace tessera::measure
