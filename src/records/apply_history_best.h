#pragma once
// Dispatch from a tuning log: for a task (workload key) on a target, the best
// record measured on a target that matches it (target::same_code_target:
// kind, vector ISA and width, threads). Where there is none, callers use the
// task's fallback configuration, and lookup() says so once per workload and
// why, because a fallback may be much slower and the user should know.
#include <iosfwd>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "target/target.h"
#include "records/record.h"

namespace tessera::records {

class ApplyHistoryBest {
 public:
  // Keeps the valid records per workload key, best first (pick_best's rule).
  explicit ApplyHistoryBest(const std::vector<Record>& records);
  // Loads a log, skipping damaged lines with warnings; throws tessera::Error
  // when the file cannot be opened.
  static ApplyHistoryBest from_file(const std::string& path, std::ostream& warnings);

  ApplyHistoryBest(const ApplyHistoryBest&) = delete;
  ApplyHistoryBest& operator=(const ApplyHistoryBest&) = delete;
  ApplyHistoryBest(ApplyHistoryBest&& other) noexcept;

  // The best record for the task on a matching target: one measured with the
  // target's own thread count, else (a log from before records carried
  // -threads=, or a target stating none) the best that states no count or is
  // asked for with none.
  std::optional<Record> query(const std::string& workload_key, const target::Target& target) const;

  // As query(), but says once per workload and target of this object, when
  // there is no record:
  //   warning: Config for target=llvm avx2 256-bit threads=2,
  //   workload=DESCRIPTION (key KEY) is missing; records exist for this
  //   workload on llvm avx512 512-bit threads=1. A fallback configuration is
  //   used, which may bring great performance regression.
  // (the "records exist" clause only when they do), and when the record found
  // matches only because a thread count is not stated, a note saying so.
  // Safe to call from several threads.
  std::optional<Record> lookup(const std::string& workload_key, const target::Target& target,
                               const std::string& workload_description, std::ostream& warnings);

  // Every valid record for the task on a matching target, best first: those
  // of the target's own thread count, then those that state none. What to
  // try next when the best cannot be used.
  std::vector<Record> ranked(const std::string& workload_key, const target::Target& target) const;

  // Number of (workload key, target match key) pairs with a record.
  size_t size() const { return size_; }

 private:
  struct Candidate {
    std::optional<target::Target> target;  // empty: the record's target text does not parse
    Record record;
  };
  // The candidates on a matching target, best first: those of the target's
  // thread count, then those that state none.
  std::vector<const Candidate*> matching(const std::string& workload_key, const target::Target& target) const;
  const Candidate* find(const std::string& workload_key, const target::Target& target) const;
  // "; records exist for this workload on A, B", or "" when there are none.
  std::string other_targets(const std::string& workload_key) const;

  std::map<std::string, std::vector<Candidate>> best_;  // by workload key, best first; immutable after construction
  size_t size_ = 0;
  std::mutex mutex_;                                      // guards warned_ and the warning stream
  std::set<std::pair<std::string, std::string>> warned_;  // (workload key, match key) already warned about
};

}  // namespace tessera::records
