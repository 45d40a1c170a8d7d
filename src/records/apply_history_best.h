#pragma once
// Dispatch from a tuning log: for a task (workload key) on a target, the best
// record measured so far. Where there is none, callers use the task's
// fallback configuration, and lookup() says so once per workload, because a
// fallback may be much slower and the user should know why.
#include <iosfwd>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "records/record.h"

namespace tessera::records {

class ApplyHistoryBest {
 public:
  // Keeps the best valid record per (workload_key, target); see pick_best.
  explicit ApplyHistoryBest(const std::vector<Record>& records);
  // Loads a log, skipping damaged lines with warnings; throws tessera::Error
  // when the file cannot be opened.
  static ApplyHistoryBest from_file(const std::string& path, std::ostream& warnings);

  ApplyHistoryBest(const ApplyHistoryBest&) = delete;
  ApplyHistoryBest& operator=(const ApplyHistoryBest&) = delete;
  ApplyHistoryBest(ApplyHistoryBest&& other) noexcept;

  // The best record for the task, matching the target string exactly.
  std::optional<Record> query(const std::string& workload_key, const std::string& target) const;

  // As query(), but when there is no record prints, the first time this
  // workload key misses on this object:
  //   warning: no tuning record for workload DESCRIPTION (key KEY) on target
  //   TARGET; using the fallback configuration, which may be much slower
  // Safe to call from several threads.
  std::optional<Record> lookup(const std::string& workload_key, const std::string& target,
                               const std::string& workload_description, std::ostream& warnings);

  // Number of (workload_key, target) pairs with a record.
  size_t size() const { return best_.size(); }

 private:
  std::map<std::pair<std::string, std::string>, Record> best_;  // immutable after construction
  std::mutex mutex_;                                           // guards warned_ and the warning stream
  std::set<std::string> warned_;                               // workload keys already warned about
};

}  // namespace tessera::records
