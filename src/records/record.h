#pragma once
// One measurement as it is kept in a tuning log: which task, on which target,
// under which configuration or schedule, and what came back. A record is one
// JSON line carrying the format version ("v": 1), so old logs stay readable
// and a damaged line costs only itself.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "measure/measure_input.h"
#include "schedule/trace.h"

namespace tessera::records {

// The format version written on every line; lines with another version are rejected.
inline constexpr int kRecordFormatVersion = 1;
// The task name of the auto-scheduler's records: a schedule (trace) of the
// DAG the workload key names, with no template config.
inline constexpr const char* kAutoScheduleTaskName = "autoschedule";

struct Record {
  std::string workload_key;             // ir::ComputeDAG::workload_key() of the task
  std::string task_name;                // e.g. "conv2d_nchwc"
  nlohmann::json workload;              // the task's arguments (shapes, attributes), free-form
  std::string target;                   // target::Target::str()
  std::optional<int64_t> config_index;  // AutoTVM: index of the config in its space
  nlohmann::json config;                // AutoTVM: knob values (an object), or null
  schedule::Trace trace;                // the schedule measured; may be empty
  measure::MeasureResult result;
  // A leader's re-measurement at the end of tuning (longer, interleaved runs;
  // costs are per-round times), written as "confirmed": true. It outranks the
  // short search measurements when choosing a best.
  bool confirmed = false;

  // Usable for pick-best and dispatch: MeasureResult::valid().
  bool valid() const { return result.valid(); }

  // One line of JSON, without a trailing newline. Doubles are written with
  // enough digits to read back bit-exact; invalid UTF-8 in strings (compiler
  // output in error messages) is replaced, never fatal. Throws tessera::Error
  // when a cost, all_cost or timestamp is not finite, as JSON cannot hold it.
  std::string to_json_line() const;
  // Throws tessera::Error saying what is wrong: not JSON, missing field, wrong
  // type, unknown version, unknown error kind, malformed schedule step.
  static Record from_json_line(const std::string& line);
};

}  // namespace tessera::records
