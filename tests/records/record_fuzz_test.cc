// Fuzzing tuning logs: 10,000 mutations of real records (fixed seed) in one
// log go the CLI's way (load with warnings, pick-best, resume and transfer
// learning, dispatch as `op --records` does). Nothing may crash; every line
// is either read or skipped with a one-line warning naming it.
#include <gtest/gtest.h>

#include <sstream>

#include "autotvm/history.h"
#include "autotvm/task.h"
#include "autotvm/tuner.h"
#include "records/apply_history_best.h"
#include "records/log_file.h"
#include "records/pick_best.h"
#include "records/records_test_util.h"
#include "testing/json_mutator.h"

namespace tessera::records {
namespace {

using nlohmann::json;
using testing::ScratchDir;

autotvm::Task small_conv() {
  ops::OpArgs a;
  a.input = {1, 16, 6, 6};
  a.weight = {16, 16, 3, 3};
  a.pad = 1;
  return autotvm::create_task("conv2d", a, target::Target::host());
}

std::vector<Record> seed_records(const autotvm::Task& task) {
  std::vector<Record> out;
  for (int64_t i = 0; i < 4; ++i) {
    const autotvm::ConfigEntity c = task.space.get(i * 7 % task.space.size());
    Record r;
    r.workload_key = task.workload_key();
    r.task_name = task.name();
    r.workload = autotvm::workload_json(task);
    r.target = task.target.str();
    r.config_index = c.index();
    r.config = c.to_json();
    r.trace = task.instantiate(c);
    r.result.costs = {1e-4 * (i + 1), 1.1e-4 * (i + 1)};
    r.result.all_cost = 0.3;
    r.result.timestamp = 1.8e9 + i;
    r.confirmed = i == 3;
    out.push_back(r);
  }
  return out;
}

void collect_strings(const json& j, std::vector<std::string>& out) {
  if (j.is_string()) out.push_back(j.get<std::string>());
  if (j.is_array() || j.is_object())
    for (const auto& child : j) collect_strings(child, out);
}

size_t count_lines(const std::string& text) {
  size_t n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

TEST(RecordFuzz, TenThousandMutatedLinesNeverCrashAndEachSkipIsOneWarning) {
  ScratchDir dir;
  const autotvm::Task task = small_conv();
  const std::vector<Record> seeds = seed_records(task);
  std::vector<json> seed_json;
  std::vector<std::string> names;
  for (const Record& r : seeds) {
    seed_json.push_back(json::parse(r.to_json_line()));
    collect_strings(seed_json.back(), names);
  }
  ::tessera::testing::JsonMutator mutator(1124, names);
  std::string text;
  for (int i = 0; i < 10000; ++i) text += mutator.mutate(seed_json[i % seed_json.size()]) + "\n";
  for (const Record& r : seeds) text += r.to_json_line() + "\n";  // the good ones survive in any company
  const std::string path = dir.file("fuzz.log");
  testing::write_text(path, text);

  std::ostringstream warnings;
  const std::vector<Record> records = load_records(path, warnings);
  const std::string w = warnings.str();
  std::istringstream lines(w);
  // Ten skips are named line by line; the rest are counted in one last line.
  size_t skipped = 0, warning_lines = 0;
  const std::string more = "warning: " + path + ": skipped ";
  for (std::string line; std::getline(lines, line); ++warning_lines) {
    EXPECT_EQ(line.rfind("warning: " + path + ":", 0), 0u) << line;
    if (line.rfind(more, 0) == 0) skipped += std::stoul(line.substr(more.size()));
    else ++skipped;
  }
  EXPECT_EQ(warning_lines, 11u) << w;
  EXPECT_EQ(records.size() + skipped, count_lines(text));
  EXPECT_GT(skipped, 1000u);
  EXPECT_GE(records.size(), seeds.size());

  // What the CLI does with a log: pick-best, resume and learn from it, dispatch.
  EXPECT_NO_THROW(pick_best(records));
  std::ostringstream history_warnings;
  auto tuner = autotvm::make_tuner("xgb", task, 1);
  EXPECT_NO_THROW(autotvm::load_history(*tuner, task, records, /*other_tasks=*/true, history_warnings));
  EXPECT_NO_THROW(tuner->next_batch(8));
  ApplyHistoryBest history(records);
  std::ostringstream dispatch_warnings;
  autotvm::Dispatched d = autotvm::dispatch(task, history, dispatch_warnings);
  EXPECT_NO_THROW(d.trace.replay(task.workload.dag));
  for (const std::string& out : {history_warnings.str(), dispatch_warnings.str()}) {
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
      EXPECT_TRUE(line.rfind("warning: ", 0) == 0 || line.rfind("note: ", 0) == 0) << line;
  }
}

// The cases of the hardening issue.
TEST(RecordFuzz, HostileLinesFromTheIssueCostOnlyThemselves) {
  ScratchDir dir;
  const autotvm::Task task = small_conv();
  const std::vector<Record> seeds = seed_records(task);
  Record negative = seeds[0];
  negative.result.costs = {-1.0};
  const std::string path = dir.file("hostile.log");
  testing::write_text(path, R"({"v":1e999})"
                            "\n" +
                                std::string(100000, '[') + "\n" + negative.to_json_line() + "\n" +
                                seeds[1].to_json_line() + "\n");
  std::ostringstream warnings;
  const std::vector<Record> records = load_records(path, warnings);
  EXPECT_NE(warnings.str().find(":1: skipped damaged record (number out of range"), std::string::npos)
      << warnings.str();
  EXPECT_NE(warnings.str().find(":2: skipped damaged record (nested deeper than"), std::string::npos) << warnings.str();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_FALSE(records[0].valid());  // a negative cost is no measurement
  const std::vector<Record> best = pick_best(records);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].config_index, seeds[1].config_index);
}

}  // namespace
}  // namespace tessera::records
