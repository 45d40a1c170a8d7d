#include "records/apply_history_best.h"

#include <algorithm>
#include <ostream>
#include <set>
#include <utility>

#include "records/log_file.h"
#include "records/pick_best.h"
#include "records/target_match.h"

namespace tessera::records {

ApplyHistoryBest::ApplyHistoryBest(const std::vector<Record>& records) {
  RecordTargets targets;
  std::set<std::pair<std::string, std::string>> pairs;
  for (const Record& r : records) {
    if (!r.valid()) continue;
    Candidate c{std::nullopt, r};
    if (const target::Target* target = targets.of(r)) c.target = *target;
    best_[r.workload_key].push_back(std::move(c));
    pairs.insert({r.workload_key, targets.match_key(r)});
  }
  // Best first (pick_best's rule), so that the first match is the best and
  // the ones after it are the next to try.
  for (auto& [key, candidates] : best_)
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return better(a.record, b.record); });
  size_ = pairs.size();
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

std::vector<const ApplyHistoryBest::Candidate*> ApplyHistoryBest::matching(const std::string& workload_key,
                                                                             const target::Target& target) const {
  std::vector<const Candidate*> exact, loose;  // loose: matches only because a thread count is not stated
  auto it = best_.find(workload_key);
  if (it == best_.end()) return exact;
  for (const Candidate& c : it->second) {
    if (!c.target || !target::same_code_target(*c.target, target)) continue;
    (c.target->threads == target.threads ? exact : loose).push_back(&c);
  }
  exact.insert(exact.end(), loose.begin(), loose.end());
  return exact;
}

const ApplyHistoryBest::Candidate* ApplyHistoryBest::find(const std::string& workload_key,
                                                          const target::Target& target) const {
  const auto found = matching(workload_key, target);
  return found.empty() ? nullptr : found.front();
}

std::vector<Record> ApplyHistoryBest::ranked(const std::string& workload_key, const target::Target& target) const {
  std::vector<Record> out;
  for (const Candidate* c : matching(workload_key, target)) out.push_back(c->record);
  return out;
}

std::string ApplyHistoryBest::other_targets(const std::string& workload_key) const {
  auto it = best_.find(workload_key);
  if (it == best_.end()) return "";
  std::string listed;
  std::set<std::string> seen;
  for (const Candidate& c : it->second) {
    const std::string name = c.target ? c.target->match_key() : "'" + c.record.target + "'";
    if (seen.insert(name).second) listed += (listed.empty() ? "" : ", ") + name;
  }
  return "; records exist for this workload on " + listed;
}

std::optional<Record> ApplyHistoryBest::query(const std::string& workload_key, const target::Target& target) const {
  const Candidate* found = find(workload_key, target);
  if (!found) return std::nullopt;
  return found->record;
}

std::optional<Record> ApplyHistoryBest::lookup(const std::string& workload_key, const target::Target& target,
                                               const std::string& workload_description, std::ostream& warnings) {
  const Candidate* found = find(workload_key, target);
  std::string message;
  if (!found) {
    message = "warning: Config for target=" + target.match_key() + ", workload=" + workload_description + " (key " +
              workload_key + ") is missing" + other_targets(workload_key) +
              ". A fallback configuration is used, which may bring great performance regression.\n";
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
