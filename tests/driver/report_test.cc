// tessera report end to end: a real tuning of the narrow ResNet-18 (a few
// trials a task, leaders confirmed), the model compiled with its records and
// profiled, a baseline file; the page's numbers read back from its JSON and
// checked against the log and the build, recomputed here. A damaged log
// still makes a page that counts its damage; a log of another target is
// named as such.
#include "driver/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "driver/compile.h"
#include "driver/tune_network.h"
#include "graph/model_source.h"
#include "records/log_file.h"
#include "tessera/error.h"

namespace tessera::driver {
namespace {

using nlohmann::json;

const std::string kNarrow = std::string(TESSERA_SOURCE_DIR) + "/tests/data/onnx/resnet18_narrow.onnx";

json page_data(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"tessera-report\">";
  const size_t start = page.find(open);
  EXPECT_NE(start, std::string::npos);
  const size_t end = page.find("</script>", start);
  return json::parse(page.substr(start + open.size(), end - start - open.size()));
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A direct convolution's multiply-adds, twice, from the record's arguments (NCHW shapes).
double conv_flop(const json& args) {
  const auto in = args.at("input").get<std::vector<int64_t>>();
  const auto w = args.at("weight").get<std::vector<int64_t>>();
  const int64_t stride = args.value("stride", 1);
  std::vector<int64_t> pad(4, args.value("pad", 0));
  if (args.contains("padding") && !args["padding"].empty()) pad = args["padding"].get<std::vector<int64_t>>();
  const int64_t oh = (in[2] + pad[0] + pad[2] - w[2]) / stride + 1, ow = (in[3] + pad[1] + pad[3] - w[3]) / stride + 1;
  return 2.0 * in[0] * w[0] * oh * ow * w[1] * w[2] * w[3];
}

struct TempFiles {
  std::string log = "/tmp/tessera-report-" + std::to_string(getpid()) + ".log";
  std::string baseline = "/tmp/tessera-report-" + std::to_string(getpid()) + ".json";
  TempFiles() { std::filesystem::remove(log); }
  ~TempFiles() {
    std::filesystem::remove(log);
    std::filesystem::remove(baseline);
  }
};

TEST(ReportOfATuning, EverySectionHoldsTheNumbersOfTheLogAndTheModel) {
  TempFiles files;
  target::Target target = target::Target::host();
  target.threads = 1;
  TuneOptions t;
  t.log = files.log;
  t.trials = 3;
  t.early_stopping = 0;
  t.confirm_leaders = 1;
  t.confirm_rounds = 2;
  t.evaluate = false;
  t.seed = 3;
  std::ostringstream progress, warnings;
  tune_network(graph::load_model(kNarrow), target, t, progress, warnings);
  std::ofstream(files.baseline) << R"({"host": "test", "versions": {"onnxruntime": "9.9"}, "rows": [
      {"model": "resnet18_narrow", "threads": 1, "side": "onnxruntime", "min_ms": 2.0, "median_ms": 2.5},
      {"model": "resnet18_narrow", "threads": 2, "side": "onnxruntime", "min_ms": 1.0, "median_ms": 1.5},
      {"model": "resnet-18", "threads": 1, "side": "onnxruntime", "min_ms": 8.0}]})";

  ReportOptions o;
  o.logs = {files.log};
  o.model = kNarrow;
  o.baseline = files.baseline;
  o.number = 3;
  o.repeat = 2;
  o.command = "tessera report test";
  std::ostringstream log;
  const std::string page = make_report(o, log);
  const json data = page_data(page);

  // The tuning: the tasks of the log, each with its trials and its best as recomputed here.
  std::ostringstream quiet;
  const std::vector<records::Record> records = records::load_records(files.log, quiet);
  std::map<std::string, std::vector<const records::Record*>> by_task;
  std::vector<std::string> order;
  for (const records::Record& r : records) {
    if (!by_task.count(r.workload_key)) order.push_back(r.workload_key);
    by_task[r.workload_key].push_back(&r);
  }
  const json& tasks = data.at("tuning").at("tasks");
  ASSERT_EQ(tasks.size(), order.size());
  EXPECT_EQ(data["tuning"]["records"].get<size_t>(), records.size());
  EXPECT_EQ(data["tuning"]["damaged"].get<size_t>(), 0u);
  int tuned_tasks = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const json& task = tasks[i];
    ASSERT_EQ(task["workload_key"], order[i]);
    size_t trials = 0;
    double best = 1e30, best_confirmed = 1e30;
    for (const records::Record* r : by_task[order[i]]) {
      if (!r->confirmed) ++trials;
      if (!r->valid()) continue;
      const double cost = median(r->result.costs);
      (r->confirmed ? best_confirmed : best) = std::min(r->confirmed ? best_confirmed : best, cost);
    }
    EXPECT_EQ(task["trials"].get<size_t>(), trials) << task;
    const double want = best_confirmed < 1e30 ? best_confirmed : best;
    if (want < 1e30) {
      ++tuned_tasks;
      EXPECT_NEAR(task["best_ms"].get<double>(), want * 1e3, want * 1e-6) << task;
    }
    EXPECT_GE(task["weight"].get<int>(), 1);
    const records::Record& first = *by_task[order[i]].front();
    if (first.task_name == "conv2d_NCHWc.x86" || first.task_name == "conv2d_NCHWc_1x1.x86") {
      const double direct = conv_flop(first.workload.at("args"));
      EXPECT_GE(task["flop"].get<double>(), direct) << task;
      EXPECT_LE(task["flop"].get<double>(), direct * 1.15) << task;  // and the fused epilogue's few
      EXPECT_NEAR(task["best_gflops"].get<double>(), task["flop"].get<double>() / want / 1e9, 1e-6) << task;
    }
  }
  EXPECT_GT(tuned_tasks, 0);
  EXPECT_GT(data["tuning"]["estimated_latency_ms"].get<double>(), 0);

  // The model: the kernels a build with the same records makes, the tuned ones named.
  CompileOptions c;
  c.records = {files.log};
  c.warnings = &quiet;
  const build::BuildResult built = compile(graph::load_model(kNarrow), target, c);
  const json& model = data.at("model");
  ASSERT_EQ(model["kernels"].size(), built.kernels.size());
  int tuned = 0;
  double share = 0;
  for (const build::KernelSummary& k : built.kernels) {
    tuned += k.tuned;
    const auto it = std::find_if(model["kernels"].begin(), model["kernels"].end(),
                                 [&](const json& j) { return j["name"] == k.name; });
    ASSERT_NE(it, model["kernels"].end()) << k.name;
    EXPECT_EQ((*it)["schedule"], k.tuned ? "tuning record" : "hand-written") << k.name;
    EXPECT_EQ((*it)["calls"].get<int>(), k.calls) << k.name;
    EXPECT_DOUBLE_EQ((*it)["flop"].get<double>(), k.dag.flop_count()) << k.name;
    EXPECT_GT((*it)["ms"].get<double>(), 0) << k.name;
    share += (*it)["share"].get<double>();
  }
  EXPECT_GT(tuned, 0);
  EXPECT_EQ(model["tuned_kernels"].get<int>(), tuned);
  EXPECT_NEAR(share, 100, 0.01);
  EXPECT_GT(model["latency_ms"].get<double>(), 0);
  EXPECT_EQ(model["threads"].get<int>(), 1);
  // The ceilings are measured (their values are timings, not asserted here);
  // the page flags the kernels that plot above the peak, which Winograd's
  // flop counts can (its transforms' products by constant matrices are
  // counted in full and mostly folded away by the compiled code).
  const double peak = model.at("peak").at("gflops").get<double>();
  EXPECT_GT(peak, 0);
  EXPECT_GT(model["peak"]["gbytes_per_second"].get<double>(), 0);
  EXPECT_EQ(model["peak"]["vector_bits"].get<int>(), std::min(target.vector_bits, 512));
  bool above = false;
  for (const json& k : model["kernels"]) above = above || k["gflops"].get<double>() > peak;
  EXPECT_EQ(page.find("id=\"above-peak\"") != std::string::npos, above);

  // The baselines: only the row of this model at its thread count.
  const json& rows = data.at("baselines").at("rows");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["side"], "onnxruntime");
  EXPECT_NEAR(rows[0]["tessera_ratio"].get<double>(), model["latency_ms"].get<double>() / 2.0, 1e-9);
  EXPECT_EQ(data["baselines"]["versions"]["onnxruntime"], "9.9");

  // Every section and chart is on the page: two charts for the task
  // scheduler, two a task, shares and roofline, baselines.
  for (const std::string id : {"tuning", "task-scheduler", "tasks", "model", "kernels", "baselines"})
    EXPECT_NE(page.find("id=\"" + id + "\""), std::string::npos) << id;
  for (size_t i = 0; i < order.size(); ++i)
    EXPECT_NE(page.find("id=\"task-" + std::to_string(i) + "\""), std::string::npos) << i;
  EXPECT_EQ(count(page, "<svg"), 2 + 2 * order.size() + 2 + 1);
  EXPECT_NE(page.find("roof: min(peak"), std::string::npos);
  EXPECT_EQ(count(page, "http://") + count(page, "https://"), count(page, "xmlns=\"http://www.w3.org/2000/svg\""))
      << "the page fetches nothing";
}

records::Record a_record(const std::string& target, double cost) {
  records::Record r;
  r.workload_key = "k" + target.substr(0, 4);
  r.task_name = "autoschedule";
  r.workload = {{"nodes", "conv"}};
  r.target = target;
  r.result.costs = {cost};
  r.result.timestamp = 100 + cost;
  return r;
}

TEST(Report, ADamagedLogStillMakesAPageThatCountsTheDamage) {
  TempFiles files;
  {
    records::RecordWriter w(files.log);
    w.append({a_record("llvm -threads=1", 1e-3), a_record("llvm -threads=1", 2e-3)});
  }
  std::ofstream(files.log, std::ios::app) << "garbage\n{\"v\":1,\"workload_key\":\"x\"\n";
  ReportOptions o;
  o.logs = {files.log};
  std::ostringstream log;
  const std::string page = make_report(o, log);
  const json data = page_data(page);
  EXPECT_EQ(data["tuning"]["records"].get<int>(), 2);
  EXPECT_EQ(data["tuning"]["damaged"].get<int>(), 2);
  EXPECT_NE(page.find("id=\"damaged\""), std::string::npos);
  EXPECT_NE(page.find(files.log + ":3"), std::string::npos) << "the damaged line is named";
  ASSERT_EQ(data["tuning"]["tasks"].size(), 1u);
  EXPECT_NEAR(data["tuning"]["tasks"][0]["best_ms"].get<double>(), 1.0, 1e-12);
  EXPECT_EQ(page.find("id=\"model\""), std::string::npos);
}

TEST(Report, ALogOfAnotherTargetIsNamedAsSuch) {
  TempFiles files;
  {
    records::RecordWriter w(files.log);
    w.append({a_record("llvm -threads=1", 1e-3), a_record("cuda -arch=sm_90", 2e-3)});
  }
  ReportOptions o;
  o.logs = {files.log};
  o.target = "llvm -threads=1";
  std::ostringstream log;
  const std::string page = make_report(o, log);
  const json data = page_data(page);
  ASSERT_EQ(data["tuning"]["other_targets"].size(), 1u);
  EXPECT_NE(data["tuning"]["other_targets"][0].get<std::string>().find("cuda"), std::string::npos);
  EXPECT_NE(page.find("Records for another target"), std::string::npos);
  EXPECT_EQ(count(page, "(another target)"), 1u);
  EXPECT_THROW(
      [&] {
        ReportOptions missing = o;
        missing.logs = {files.log + ".missing"};
        make_report(missing, log);
      }(),
      Error);
}

}  // namespace
}  // namespace tessera::driver
