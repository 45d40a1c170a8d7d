#pragma once
// What is measured (a task's DAG under one schedule, for a target) and what
// comes back. Measurement errors are data, never exceptions.
#include <string>
#include <vector>

#include "codegen/target.h"
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
  codegen::Target target = codegen::Target::host();
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
  // Measured without error, with a positive, finite fastest cost: a result
  // a tuner can rank.
  bool valid() const;
  double min_cost() const;    // +inf when there is no cost
  double mean_cost() const;
  double median_cost() const;  // the mean of the two middle costs when their number is even
};

}  // namespace tessera::measure
