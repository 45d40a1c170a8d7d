#pragma once
// Runs a workload's DAG under a schedule through the whole pipeline (lower,
// compile, load, run in this process) and compares it with the reference.
#include <string>

#include "ops/workload.h"
#include "schedule/trace.h"

namespace tessera::testing {

struct CheckResult {
  double max_abs_error = 0;
  // max |got - want| / max |want|: normwise, so outputs that are sums of
  // many signed terms and happen to land near 0 do not dominate.
  double max_rel_error = 0;
  std::string lowered;       // the loop nest, for failure messages
};

CheckResult check_schedule(const ops::Workload& w, const schedule::Trace& trace, int threads = 1);
double max_relative_error(const ops::Workload& w, const schedule::Trace& trace);

}  // namespace tessera::testing
