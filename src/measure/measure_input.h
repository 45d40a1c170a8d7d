#pragma once
// What is measured (a task's DAG under one schedule, for a target) and what
// comes back. Measurement errors are data, never exceptions.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "target/target.h"
#include "ir/compute_dag.h"
#include "schedule/trace.h"

namespace tessera::measure {

enum class ErrorKind {
  None, Instantiation, CompileHost, CompileDevice, RuntimeDevice, WrongAnswer,
  BuildTimeout, RunTimeout, Unknown,
};
std::string to_string(ErrorKind k);           // "none", "instantiation", "compile-host", ...
ErrorKind error_kind_from_string(const std::string& s);  // throws tessera::Error

struct MeasureInput {
  ir::ComputeDAG dag;
  schedule::Trace trace;
  target::Target target = target::Target::host();
  // An accelerator's kernel (VTA's conv2d_packed) instead of a DAG under a
  // trace: {"template": ..., "workload": its attributes, "config": the
  // template's knob values}, which the accelerator's builder lowers to a
  // program (measure/vta_measure.h). Null for every other kernel.
  nlohmann::json accelerator;
};

struct BuildResult {
  std::string object_path;   // the compiled kernel, when error == None
  std::string function_name;
  ErrorKind error = ErrorKind::None;
  std::string error_message;
  double time_cost = 0;      // seconds spent building
};

struct MeasureResult {
  std::vector<double> costs;  // seconds per run, one per repeat
  ErrorKind error = ErrorKind::None;
  std::string error_message;
  double all_cost = 0;        // seconds for build + run of this candidate
  double timestamp = 0;       // unix time when the result was made
  // Measured without error, with at least one cost, every cost finite and
  // positive: the one test of a result that can be ranked (tuners, pick-best,
  // dispatch, the progress line).
  bool valid() const;
  // The one cost every ranking compares: the median over the costs (robust
  // to a slow spell of a noisy machine, and to one lucky run), +inf when the
  // result is not valid().
  double rank_cost() const;
  // Says something about the schedule itself: valid(), or an error the
  // schedule causes (it does not instantiate or compile, crashes, or computes
  // a wrong answer). Timeouts, unknown errors and results without costs
  // depend on the run (its options, a loaded machine): a resumed run
  // measures those configs again.
  bool conclusive() const;
  double min_cost() const;    // +inf when there is no cost
  double mean_cost() const;
  double median_cost() const;  // the mean of the two middle costs when their number is even
};

}  // namespace tessera::measure
