#include "records/apply_history_best.h"

#include <ostream>

#include "records/log_file.h"
#include "records/pick_best.h"

namespace tessera::records {

ApplyHistoryBest::ApplyHistoryBest(const std::vector<Record>& records) {
  for (Record& r : pick_best(records)) {
    auto key = std::make_pair(r.workload_key, r.target);
    best_.emplace(std::move(key), std::move(r));
  }
}

ApplyHistoryBest ApplyHistoryBest::from_file(const std::string& path, std::ostream& warnings) {
  return ApplyHistoryBest(load_records(path, warnings));
}

ApplyHistoryBest::ApplyHistoryBest(ApplyHistoryBest&& other) noexcept {
  std::lock_guard lock(other.mutex_);
  best_ = std::move(other.best_);
  warned_ = std::move(other.warned_);
}

std::optional<Record> ApplyHistoryBest::query(const std::string& workload_key, const std::string& target) const {
  auto it = best_.find({workload_key, target});
  if (it == best_.end()) return std::nullopt;
  return it->second;
}

std::optional<Record> ApplyHistoryBest::lookup(const std::string& workload_key, const std::string& target,
                                               const std::string& workload_description, std::ostream& warnings) {
  if (auto found = query(workload_key, target)) return found;
  std::lock_guard lock(mutex_);
  if (warned_.insert(workload_key).second) {
    warnings << "warning: no tuning record for workload " << workload_description << " (key " << workload_key
             << ") on target " << target << "; using the fallback configuration, which may be much slower\n";
  }
  return std::nullopt;
}

}  // namespace tessera::records
