#pragma once
// Resuming a tuning run from its log: what has already been measured for a
// task, so a restarted tuner does not spend trials on it again.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "records/record.h"

namespace tessera::records {

// Configurations of one task already in the log. Errored measurements count:
// a config that failed to build or timed out would fail again.
struct MeasuredSet {
  std::set<int64_t> config_indexes;  // AutoTVM records
  std::set<std::string> traces;      // schedule::Trace::dump() of records with a non-empty trace

  bool contains_config(int64_t index) const { return config_indexes.count(index) > 0; }
  bool contains_trace(const schedule::Trace& trace) const { return traces.count(trace.dump()) > 0; }
};

// The configurations measured for (workload_key, target) in `records`.
MeasuredSet measured_configs(const std::vector<Record>& records, const std::string& workload_key,
                             const std::string& target);

}  // namespace tessera::records
