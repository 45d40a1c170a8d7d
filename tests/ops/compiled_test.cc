// Every operator compiled under the default schedule (and under an empty
// trace) matches its reference: odd sizes, stride 2, asymmetric padding,
// dilation, packed layouts and fused epilogues (cases in ops_cases.h).
#include <gtest/gtest.h>

#include "ops_cases.h"
#include "schedule/default_schedule.h"
#include "testing/check.h"

namespace tessera::ops {
namespace {

void expect_matches(const Workload& w, const schedule::Trace& trace, int threads) {
  tessera::testing::CheckResult r = tessera::testing::check_schedule(w, trace, threads);
  EXPECT_LE(r.max_rel_error, 1e-4) << r.lowered;
}

TEST(OpsCompiled, DefaultScheduleMatchesReference) {
  for (const auto& c : test::registry_cases()) {
    SCOPED_TRACE(test::describe(c));
    Workload w = make_workload(c.op, c.args);
    // Two threads, so the default schedule's parallel loops really split.
    expect_matches(w, schedule::default_schedule(w.dag), 2);
  }
}

TEST(OpsCompiled, EmptyTraceMatchesReference) {
  for (const auto& c : test::registry_cases()) {
    SCOPED_TRACE(test::describe(c));
    expect_matches(make_workload(c.op, c.args), schedule::Trace{}, 1);
  }
}

}  // namespace
}  // namespace tessera::ops
