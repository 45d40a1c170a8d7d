#include "records/resume.h"

namespace tessera::records {

MeasuredSet measured_configs(const std::vector<Record>& records, const std::string& workload_key,
                             const std::string& target) {
  MeasuredSet measured;
  for (const Record& r : records) {
    if (r.workload_key != workload_key || r.target != target) continue;
    if (r.config_index) measured.config_indexes.insert(*r.config_index);
    if (!r.trace.steps().empty()) measured.traces.insert(r.trace.dump());
  }
  return measured;
}

}  // namespace tessera::records
