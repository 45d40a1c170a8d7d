// Logs of earlier runs feed a tuner: its own configs count as measured, other
// tasks' records warm-start the model, and a record that names no buildable
// task is skipped with a warning instead of stopping the run.
#include "autotvm/history.h"

#include <gtest/gtest.h>

#include <sstream>

#include "autotvm/task.h"

namespace tessera::autotvm {
namespace {

Task dense_task(int64_t m) {
  ops::OpArgs a;
  a.input = {m, 16};
  a.weight = {32, 16};
  return create_task("dense", a, codegen::Target::host());
}

std::vector<records::Record> fake_log(const Task& task, int n) {
  std::vector<records::Record> log;
  for (int i = 0; i < n; ++i) {
    ConfigEntity c = task.space.get(i);
    records::Record r;
    r.workload_key = task.workload_key();
    r.task_name = task.name();
    r.workload = workload_json(task);
    r.target = task.target.str();
    r.config_index = c.index();
    r.config = c.to_json();
    r.trace = task.instantiate(c);
    r.result.costs = {1e-5 * (i + 1)};
    log.push_back(r);
  }
  return log;
}

TEST(AutotvmHistory, OwnConfigsAreMarkedAndOtherTasksWarmStartTheModel) {
  Task a = dense_task(4), b = dense_task(8);
  auto log = fake_log(a, 6);
  auto more = fake_log(b, 3);
  log.insert(log.end(), more.begin(), more.end());
  records::Record broken = log.front();
  broken.workload_key = "not-a-task";
  broken.workload = {{"op", "teleport"}, {"args", nlohmann::json::object()}};
  log.push_back(broken);

  auto tuner = make_tuner("xgb_itervar", b, 1);
  std::ostringstream warnings;
  EXPECT_EQ(load_history(*tuner, b, log, /*other_tasks=*/true, warnings), 3);
  EXPECT_NE(warnings.str().find("teleport"), std::string::npos) << warnings.str();
  for (const auto& c : tuner->next_batch(static_cast<int>(b.space.size())))
    EXPECT_GE(c.index(), 3) << "config " << c.index() << " was already in the log";
}

TEST(AutotvmHistory, WithoutOtherTasksOnlyTheOwnConfigsCount) {
  Task a = dense_task(4), b = dense_task(8);
  auto log = fake_log(a, 5);
  auto tuner = make_tuner("random", b, 1);
  std::ostringstream warnings;
  EXPECT_EQ(load_history(*tuner, b, log, /*other_tasks=*/false, warnings), 0);
  EXPECT_TRUE(warnings.str().empty());
}

}  // namespace
}  // namespace tessera::autotvm
