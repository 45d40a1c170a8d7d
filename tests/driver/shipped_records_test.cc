// Pre-tuned records shipped with Tessera (records/shipped.h): a compile
// given no records takes those of its own target from the shipped logs,
// says so once and nothing about the kernels they do not cover; records of
// another target, shipped_records = false (--no-shipped-records) and
// records of the caller's own each keep them out.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "../compile/network_check.h"
#include "autotvm/history.h"
#include "driver/compile.h"
#include "driver/extract_tasks.h"
#include "records/apply_history_best.h"
#include "records/log_file.h"
#include "records/shipped.h"
#include "graph/interpreter.h"
#include "graph/model_source.h"
#include "measure/kernel_args.h"
#include "runtime/gpu_graph_executor.h"
#include "runtime/opencl_device.h"

namespace tessera::driver {
namespace {

int tuned_kernels(const build::BuildResult& built) {
  int n = 0;
  for (const build::KernelSummary& k : built.kernels) n += k.tuned;
  return n;
}

TEST(ShippedRecords, ACompileWithoutRecordsTakesTheShippedOnesOfItsTarget) {
  const graph::Graph model = build::test::narrow_resnet18();
  target::Target target = target::Target::host();
  target.threads = 1;
  // Half of the network's tasks (their fallback configs) shipped for this
  // target; all of them for a target of 7 threads.
  std::vector<records::Record> mine, all, other;
  for (const NetworkTask& t : extract_tasks(build::optimize_for_target(model, target), target)) {
    measure::MeasureResult ok;
    ok.costs = {1e-3};
    records::Record r = autotvm::make_record(t.task, t.task.space.fallback(), ok);
    if (mine.size() < 5) mine.push_back(r);
    all.push_back(r);
    target::Target seven = target;
    seven.threads = 7;
    r.target = seven.str();
    other.push_back(r);
  }
  ASSERT_GE(other.size(), 10u);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tessera_shipped_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  records::write_records((dir / "mine.log").string(), mine);
  records::write_records((dir / "seven_threads.log").string(), other);
  const std::filesystem::path given = dir.string() + ".given.log";
  records::write_records(given.string(), all);

  CompileOptions o;
  o.shipped_dir = dir.string();
  std::ostringstream warnings;
  o.warnings = &warnings;
  // Five tasks' records (a task stands for one kernel or more), fewer kernels than all the tasks' records tune.
  const int shipped = tuned_kernels(compile(model, target, o));
  EXPECT_GE(shipped, 5) << warnings.str();
  CompileOptions own;
  own.records = {given.string()};
  std::ostringstream own_warnings;
  own.warnings = &own_warnings;
  const int tuned_by_all = tuned_kernels(compile(model, target, own));
  EXPECT_LT(shipped, tuned_by_all);
  EXPECT_EQ(own_warnings.str().find("pre-tuned"), std::string::npos);  // records given: the shipped ones stay out
  EXPECT_NE(warnings.str().find("note: 5 pre-tuned records shipped for '" + target.match_key() +
                                "' (mine.log, tuned on " + target.cpu + ")"),
            std::string::npos)
      << warnings.str();
  EXPECT_EQ(warnings.str().find("Config for target="), std::string::npos) << warnings.str();  // the rest: silent

  o.shipped_records = false;
  EXPECT_EQ(tuned_kernels(compile(model, target, o)), 0);
  o.shipped_records = true;
  target::Target three = target;
  three.threads = 3;
  std::ostringstream none;
  o.warnings = &none;
  EXPECT_EQ(tuned_kernels(compile(model, three, o)), 0);
  EXPECT_EQ(none.str().find("pre-tuned"), std::string::npos) << none.str();

  const std::vector<records::ShippedLog> logs = records::list_shipped(dir.string(), warnings);
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[0].records, 5u);
  EXPECT_EQ(logs[0].targets, std::vector<std::string>{target.match_key()});
  EXPECT_EQ(logs[1].records, other.size());
  std::filesystem::remove_all(dir);
  std::filesystem::remove(given);
}

// The records shipped for CUDA (tuned on an H100/H200) replay on today's code:
// retargeted to OpenCL, every one schedules its kernel of the zoo's ResNet-18,
// and the network computes what the interpreter computes.
TEST(ShippedRecords, TheShippedCudaRecordsReplayAndComputeTheReference) {
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  std::ostringstream warnings;
  const target::Target opencl = target::Target::parse("opencl");
  std::vector<records::Record> retargeted;
  for (const records::ShippedLog& log : records::list_shipped(records::shipped_records_dir(), warnings))
    for (records::Record r : records::load_records(log.path, warnings))
      if (target::Target::parse(r.target).kind == "cuda") {
        r.target = opencl.str();
        retargeted.push_back(std::move(r));
      }
  EXPECT_EQ(warnings.str(), "");
  if (retargeted.empty()) GTEST_SKIP() << "no CUDA records shipped";
  const graph::Graph model = graph::load_model("resnet-18");
  CompileOptions options;
  options.loaded_records = retargeted;
  options.warnings = &warnings;
  build::BuildResult built = compile(model, opencl, options);
  EXPECT_EQ(tuned_kernels(built), static_cast<int>(retargeted.size())) << warnings.str();

  runtime::GpuGraphExecutor ex(std::move(built.artifact), "resnet-18");
  std::vector<runtime::NDArray> inputs;
  inputs.emplace_back(ex.input_shape(0));
  inputs[0].fill_random(9);
  ex.set_input(0, inputs[0]);
  ex.run();
  const measure::OutputComparison c = measure::compare_output(ex.get_output(0), graph::interpret(model, inputs)[0]);
  EXPECT_TRUE(c.ok) << c.describe();
}

// The records shipped for CPU targets (AVX-512 and AVX2, 1 and 2 threads)
// still name today's tasks: a change of a workload key or a template's
// knobs would leave them applying to nothing, silently, and the first
// compile untuned. Each schedules a kernel of the zoo's ResNet-18,
// MobileNet-v2 or ResNet-50 built for its own target (nothing compiled).
TEST(ShippedRecordsZoo, EveryShippedCpuRecordSchedulesAKernelOfTheZoo) {
  std::ostringstream warnings;
  int logs = 0;
  for (const records::ShippedLog& log : records::list_shipped(records::shipped_records_dir(), warnings)) {
    const std::vector<records::Record> shipped = records::load_records(log.path, warnings);
    if (shipped.empty() || target::Target::parse(shipped[0].target).kind != "llvm") continue;
    ++logs;
    const target::Target target = target::Target::parse(shipped[0].target);
    records::ApplyHistoryBest history(shipped);
    std::set<std::string> used;
    for (const char* model : {"resnet-18", "mobilenet-v2", "resnet-50"}) {
      build::BuildOptions o;
      o.history = &history;
      o.warnings = &warnings;
      o.warn_untuned = false;
      o.compile = false;
      for (const build::KernelSummary& k : build::build(graph::load_model(model), target, o).kernels)
        if (k.tuned) used.insert(k.task_key);
    }
    for (const records::Record& r : shipped)
      EXPECT_TRUE(used.count(r.workload_key)) << log.path << ": " << r.task_name << " " << r.workload.dump();
  }
  EXPECT_GE(logs, 4) << "AVX-512 and AVX2 at 1 and 2 threads";
  EXPECT_EQ(warnings.str(), "");
}

TEST(ShippedRecords, NoDirectoryMeansNone) {
  std::ostringstream warnings;
  EXPECT_TRUE(records::list_shipped("/nonexistent/tessera/records", warnings).empty());
  EXPECT_TRUE(records::shipped_records_for("", target::Target::host(), warnings).records.empty());
  EXPECT_EQ(warnings.str(), "");
}

}  // namespace
}  // namespace tessera::driver
