#include "records/apply_history_best.h"

#include <ostream>

#include "records/log_file.h"
#include "records/pick_best.h"
#include "records/target_match.h"

namespace tessera::records {

ApplyHistoryBest::ApplyHistoryBest(const std::vector<Record>& records) {
  RecordTargets targets;
  for (Record& r : pick_best(records)) {
    Candidate c{std::nullopt, r};
    if (const codegen::Target* target = targets.of(r)) c.target = *target;
    best_[r.workload_key].push_back(std::move(c));
    ++size_;
  }
}

ApplyHistoryBest ApplyHistoryBest::from_file(const std::string& path, std::ostream& warnings) {
  return ApplyHistoryBest(load_records(path, warnings));
}

ApplyHistoryBest::ApplyHistoryBest(ApplyHistoryBest&& other) noexcept {
  std::lock_guard lock(other.mutex_);
  best_ = std::move(other.best_);
  size_ = other.size_;
  warned_ = std::move(other.warned_);
}

const ApplyHistoryBest::Candidate* ApplyHistoryBest::find(const std::string& workload_key,
                                                          const codegen::Target& target) const {
  auto it = best_.find(workload_key);
  if (it == best_.end()) return nullptr;
  const Candidate* loose = nullptr;  // matches only because a thread count is not stated
  for (const Candidate& c : it->second) {
    if (!c.target || !codegen::same_code_target(*c.target, target)) continue;
    if (c.target->threads == target.threads) return &c;
    if (!loose || better(c.record, loose->record)) loose = &c;
  }
  return loose;
}

std::string ApplyHistoryBest::other_targets(const std::string& workload_key) const {
  auto it = best_.find(workload_key);
  if (it == best_.end()) return "";
  std::string listed;
  for (const Candidate& c : it->second)
    listed += (listed.empty() ? "" : ", ") + (c.target ? c.target->match_key() : "'" + c.record.target + "'");
  return "; records exist for this workload on " + listed;
}

std::optional<Record> ApplyHistoryBest::query(const std::string& workload_key, const codegen::Target& target) const {
  const Candidate* found = find(workload_key, target);
  if (!found) return std::nullopt;
  return found->record;
}

std::optional<Record> ApplyHistoryBest::lookup(const std::string& workload_key, const codegen::Target& target,
                                               const std::string& workload_description, std::ostream& warnings) {
  const Candidate* found = find(workload_key, target);
  std::string message;
  if (!found) {
    message = "warning: no tuning record for workload " + workload_description + " (key " + workload_key + ") on " +
              target.match_key() + other_targets(workload_key) +
              "; using the fallback configuration, which may be much slower\n";
  } else if (std::string loose = loose_thread_match(*found->target, target); !loose.empty()) {
    message = "note: the tuning record of workload " + workload_description + " (key " + workload_key + ") was " +
              loose + "\n";
  }
  if (!message.empty()) {
    std::lock_guard lock(mutex_);
    if (warned_.insert({workload_key, target.match_key()}).second) warnings << message;
  }
  if (!found) return std::nullopt;
  return found->record;
}

}  // namespace tessera::records
