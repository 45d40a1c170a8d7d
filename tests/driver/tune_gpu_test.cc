// Tuning a network for a GPU target the way `tessera tune --target T` does:
// the target read as the command line reads it (for cuda: from the device),
// then both searches measure their candidates in child processes on that
// device. Every task must log successful measurements and the compile must
// use them. On the first H200 run every CUDA measurement failed: reading the
// target had initialised CUDA in the tuner, and CUDA does not survive fork.
// CI runs the OpenCL case on PoCL; the CUDA cases run on a GPU machine
// ("cuda -tf32": the convolution's candidates on TF32 tensor cores, checked
// at the half tolerance, measure).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <sstream>

#include "driver/compile.h"
#include "driver/parse_target.h"
#include "driver/tune_network.h"
#include "graph/builder.h"
#include "records/log_file.h"
#include "runtime/cuda_backend.h"
#include "runtime/opencl_device.h"

namespace tessera::driver {
namespace {

graph::Graph conv_and_dense() {
  graph::GraphBuilder b(5);
  graph::NodeId x = b.input("data", {1, 8, 8, 8});
  graph::NodeId y = b.conv2d(x, b.random_constant("c1", {16, 8, 3, 3}, -0.3f, 0.3f),
                             graph::Conv2dAttrs::symmetric(1, 1), "conv1");
  y = b.relu(y, "relu1");
  y = b.global_avg_pool2d(y, "NCHW", "gap");
  y = b.flatten(y, 1, "flatten");
  return b.finish({b.dense(y, b.random_constant("fc.weight", {10, 16}, -0.3f, 0.3f), "fc")});
}

// "cuda -tf32" -> "cuda_tf32": a test's or a file's name.
std::string name_of(std::string target_text) {
  for (char& c : target_text)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  target_text.erase(std::unique(target_text.begin(), target_text.end(),
                                [](char a, char b) { return a == '_' && b == '_'; }),
                    target_text.end());
  return target_text;
}

class TuneOnGpu : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(TuneOnGpu, EveryTaskMeasuresOnTheDeviceTheTargetWasReadFrom) {
  const auto& [target_text, search] = GetParam();
  const bool cuda = target_text.rfind("cuda", 0) == 0;
  const std::string why = cuda ? runtime::cuda_unavailable_reason() : runtime::opencl_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << target_text << ": " << why;
  const target::Target target = parse_target(target_text);
  const graph::Graph model = conv_and_dense();
  const std::string log = ::testing::TempDir() + "tune_gpu_" + name_of(target_text) + "_" + search + "_" +
                          std::to_string(::getpid()) + ".log";
  std::filesystem::remove(log);

  TuneOptions options;
  options.log = log;
  options.search = search;
  options.trials = search == "auto" ? 8 : 4;
  options.early_stopping = 0;
  options.confirm_leaders = 0;
  options.evaluate = false;
  std::ostringstream progress, warnings;
  const TuneResult tuned = tune_network(model, target, options, progress, warnings);
  ASSERT_GT(tuned.tasks, 0);
  EXPECT_GT(tuned.trials, 0);

  // Per task: how many of its measurements ran, and the first error seen.
  std::map<std::string, int> ran;
  std::map<std::string, std::string> first_error;
  for (const records::Record& r : records::load_records(log, warnings)) {
    if (r.result.valid()) {
      ++ran[r.workload_key];
    } else {
      ran.try_emplace(r.workload_key, 0);
      first_error.try_emplace(r.workload_key, r.result.error_message);
    }
  }
  EXPECT_EQ(static_cast<int>(ran.size()), tuned.tasks) << progress.str();
  for (const auto& [key, count] : ran) EXPECT_GT(count, 0) << key << ": " << first_error[key];

  CompileOptions compile_options;
  compile_options.records = {log};
  compile_options.warnings = &warnings;
  const build::BuildResult built = compile(model, target, compile_options);
  int kernels_tuned = 0;
  for (const build::KernelSummary& k : built.kernels) kernels_tuned += k.tuned ? 1 : 0;
  EXPECT_GT(kernels_tuned, 0) << warnings.str();
  std::filesystem::remove(log);
}

INSTANTIATE_TEST_SUITE_P(Targets, TuneOnGpu,
                         ::testing::Combine(::testing::Values("opencl", "cuda", "cuda -tf32"),
                                            ::testing::Values("templates", "auto")),
                         [](const auto& info) {
                           return name_of(std::get<0>(info.param)) + "_" + std::get<1>(info.param);
                         });

}  // namespace
}  // namespace tessera::driver
