#include <gtest/gtest.h>

#include <unistd.h>

#include <csignal>
#include <filesystem>

#include "measure/builder.h"
#include "measure_test_util.h"

namespace tessera::measure {
namespace {

MeasureInput add_input(schedule::Trace trace = {}) { return {testing::add_dag(), std::move(trace)}; }

schedule::Trace split_of_missing_stage(const std::string& stage) {
  return schedule::Trace().split(stage, "i", {4});
}

TEST(MeasureLocalBuilder, ValidTraceBuildsAnObjectFile) {
  LocalBuilder builder;
  auto results = builder.build({add_input()});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].error, ErrorKind::None) << results[0].error_message;
  EXPECT_EQ(results[0].function_name, "kernel");
  EXPECT_TRUE(std::filesystem::exists(results[0].object_path));
  EXPECT_GT(std::filesystem::file_size(results[0].object_path), 0u);
  EXPECT_GT(results[0].time_cost, 0);
}

TEST(MeasureLocalBuilder, InvalidTraceIsInstantiationErrorNamingTheStage) {
  LocalBuilder builder;
  auto results = builder.build({add_input(split_of_missing_stage("no_such_stage"))});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].error, ErrorKind::Instantiation);
  EXPECT_NE(results[0].error_message.find("no_such_stage"), std::string::npos)
      << results[0].error_message;
  EXPECT_TRUE(results[0].object_path.empty());
}

TEST(MeasureLocalBuilder, ParallelResultsComeBackInInputOrder) {
  LocalBuilder builder({.n_parallel = 2});
  std::vector<MeasureInput> inputs = {add_input(), add_input(split_of_missing_stage("stage_one")),
                                      add_input(), add_input(split_of_missing_stage("stage_three")),
                                      add_input()};
  auto results = builder.build(inputs);
  ASSERT_EQ(results.size(), inputs.size());
  for (int i : {0, 2, 4}) EXPECT_EQ(results[i].error, ErrorKind::None) << i << ": " << results[i].error_message;
  EXPECT_EQ(results[1].error, ErrorKind::Instantiation);
  EXPECT_NE(results[1].error_message.find("stage_one"), std::string::npos);
  EXPECT_EQ(results[3].error, ErrorKind::Instantiation);
  EXPECT_NE(results[3].error_message.find("stage_three"), std::string::npos);
  // Every candidate gets its own object file.
  EXPECT_NE(results[0].object_path, results[2].object_path);
  EXPECT_NE(results[2].object_path, results[4].object_path);
}

TEST(MeasureLocalBuilder, CrashingWorkerIsCompileHostErrorWithSignalName) {
  LocalBuilder builder;
  builder.set_fault_hook_for_testing([](int index) {
    if (index == 0) std::raise(SIGSEGV);
  });
  auto results = builder.build({add_input(), add_input()});
  EXPECT_EQ(results[0].error, ErrorKind::CompileHost);
  EXPECT_NE(results[0].error_message.find("SIGSEGV"), std::string::npos) << results[0].error_message;
  EXPECT_EQ(results[1].error, ErrorKind::None) << results[1].error_message;
}

TEST(MeasureLocalBuilder, HangingWorkerIsKilledAsBuildTimeout) {
  LocalBuilder builder({.timeout = 1, .n_parallel = 1});
  builder.set_fault_hook_for_testing([](int index) {
    if (index == 0)
      for (;;) pause();
  });
  auto results = builder.build({add_input(), add_input()});
  EXPECT_EQ(results[0].error, ErrorKind::BuildTimeout);
  EXPECT_LT(results[0].time_cost, 1 + 10.0);  // killed soon after its timeout
  EXPECT_EQ(results[1].error, ErrorKind::None) << results[1].error_message;
}

TEST(MeasureLocalBuilder, ReapsEveryWorkerAndClosesEveryPipe) {
  int fds_before = testing::count_open_fds();
  LocalBuilder builder({.timeout = 1, .n_parallel = 2});
  builder.set_fault_hook_for_testing([](int index) {
    if (index == 0) std::raise(SIGABRT);
    if (index == 1)
      for (;;) pause();
  });
  builder.build({add_input(), add_input(), add_input(split_of_missing_stage("x")), add_input()});
  EXPECT_TRUE(testing::has_no_children());
  EXPECT_EQ(testing::count_open_fds(), fds_before);
}

TEST(MeasureLocalBuilder, TemporaryBuildDirIsRemovedWithTheBuilder) {
  std::string dir;
  {
    LocalBuilder builder;
    dir = builder.build_dir();
    EXPECT_TRUE(std::filesystem::is_directory(dir));
    builder.build({add_input()});
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace tessera::measure
