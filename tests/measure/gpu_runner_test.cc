// GPU candidates are measured by children that stay across candidates (the
// driver starts once per child, not per candidate), and a crash or a hang
// still costs one candidate: the next goes on in a fresh child. Run on the
// OpenCL device (PoCL in CI); the children's pids come back through a file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>

#include "measure/runner.h"
#include "measure_test_util.h"
#include "runtime/opencl_device.h"
#include "tir/hand_written_schedule.h"

namespace tessera::measure {
namespace {

class GpuRunner : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!runtime::opencl_unavailable_reason().empty()) return;
    builder_ = std::make_unique<LocalBuilder>();
    build_ = builder_->build({input()})[0];
  }
  static void TearDownTestSuite() { builder_.reset(); }
  static MeasureInput input() {
    const target::Target opencl = target::Target::parse("opencl");
    const ir::ComputeDAG dag = testing::add_dag();
    return {dag, tir::hand_written_schedule(dag, opencl), opencl};
  }
  void SetUp() override {
    if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_EQ(build_.error, ErrorKind::None) << build_.error_message;
    std::filesystem::remove(pids_);
  }
  void TearDown() override { std::filesystem::remove(pids_); }

  // The distinct processes the candidates ran in, as the hook wrote them.
  std::set<std::string> children() const {
    std::ifstream in(pids_);
    std::set<std::string> pids;
    for (std::string line; std::getline(in, line);) pids.insert(line);
    return pids;
  }
  // Runs in the child before candidate `index`'s kernel: notes the child.
  void note_child() const {
    const int fd = ::open(pids_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const std::string line = std::to_string(::getpid()) + "\n";
    if (fd >= 0 && ::write(fd, line.data(), line.size()) > 0) ::close(fd);
  }

  static std::unique_ptr<LocalBuilder> builder_;
  static BuildResult build_;
  const std::string pids_ = ::testing::TempDir() + "gpu_runner_pids_" + std::to_string(::getpid());
};
std::unique_ptr<LocalBuilder> GpuRunner::builder_;
BuildResult GpuRunner::build_;

TEST_F(GpuRunner, OneChildMeasuresTheWholeBatch) {
  LocalRunner runner({.repeat = 2, .check_correctness = true}, testing::add_reference());
  runner.set_fault_hook_for_testing([this](int) { note_child(); });
  const MeasureInput in = input();
  const std::vector<MeasureResult> results = runner.run({in, in, in, in}, {build_, build_, build_, build_});
  ASSERT_EQ(results.size(), 4u);
  for (const MeasureResult& r : results) {
    EXPECT_TRUE(r.valid()) << r.error_message;
    EXPECT_EQ(r.costs.size(), 2u);
    EXPECT_GT(r.all_cost, 0);
  }
  EXPECT_EQ(children().size(), 1u);
  EXPECT_TRUE(testing::has_no_children());
}

TEST_F(GpuRunner, ACrashOrAHangCostsOneCandidateAndAFreshChildGoesOn) {
  const int fds_before = testing::count_open_fds();
  // A fresh child's first candidate includes starting the OpenCL driver: 2 s
  // was too short for it under ctest -j4 on 2 loaded cores.
  const int timeout = 8;
  LocalRunner runner({.repeat = 1, .timeout = timeout, .check_correctness = true}, testing::add_reference());
  runner.set_fault_hook_for_testing([this](int index) {
    note_child();
    // SIGKILL: the OpenCL driver's LLVM catches SIGSEGV in the child once it ran.
    if (index == 1) ::kill(::getpid(), SIGKILL);
    if (index == 3)
      for (;;) pause();
  });
  const MeasureInput in = input();
  const std::vector<MeasureResult> results =
      runner.run({in, in, in, in, in}, {build_, build_, build_, build_, build_});
  ASSERT_EQ(results.size(), 5u);
  for (int i : {0, 2, 4}) EXPECT_TRUE(results[i].valid()) << i << ": " << results[i].error_message;
  EXPECT_EQ(results[1].error, ErrorKind::RuntimeDevice);
  EXPECT_NE(results[1].error_message.find("SIGKILL"), std::string::npos) << results[1].error_message;
  EXPECT_EQ(results[3].error, ErrorKind::RunTimeout) << results[3].error_message;
  EXPECT_LT(results[3].all_cost - build_.time_cost, timeout + 5.0);  // killed, not waited for
  EXPECT_EQ(children().size(), 3u) << "children: [0, 1], [2, 3], [4]";
  EXPECT_TRUE(testing::has_no_children());
  EXPECT_EQ(testing::count_open_fds(), fds_before);
}

// A network's task has no reference of its own: the host's output of its
// DAG is the check. The add kernel run as a subtraction's candidate (same
// arguments) is a wrong answer; as the add's, right.
TEST_F(GpuRunner, WithoutAReferenceCandidatesAreCheckedAgainstTheHost) {
  LocalRunner runner({.repeat = 1, .check_correctness = true, .check_gpu_against_host = true});
  const MeasureInput add = input();
  MeasureInput subtract = add;
  const ir::Tensor a = subtract.dag.placeholders()[0], b = subtract.dag.placeholders()[1];
  subtract.dag = ir::ComputeDAG({ir::compute(
      a->shape, [&](const std::vector<ir::Var>& v) { return ir::load(a, {v[0], v[1]}) - ir::load(b, {v[0], v[1]}); },
      "C", "elemwise", {"i", "j"})});
  const std::vector<MeasureResult> results = runner.run({add, subtract, add}, {build_, build_, build_});
  EXPECT_TRUE(results[0].valid()) << results[0].error_message;
  EXPECT_EQ(results[1].error, ErrorKind::WrongAnswer) << results[1].error_message;
  EXPECT_TRUE(results[2].valid()) << results[2].error_message;
}

TEST_F(GpuRunner, AWrongAnswerKeepsTheChild) {
  LocalRunner runner({.repeat = 1, .check_correctness = true}, testing::add_reference(1.0f));
  runner.set_fault_hook_for_testing([this](int) { note_child(); });
  const MeasureInput in = input();
  const std::vector<MeasureResult> results = runner.run({in, in}, {build_, build_});
  for (const MeasureResult& r : results) EXPECT_EQ(r.error, ErrorKind::WrongAnswer) << r.error_message;
  EXPECT_EQ(children().size(), 1u);
}

}  // namespace
}  // namespace tessera::measure
