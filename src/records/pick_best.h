#pragma once
// Reducing a tuning log to the best measurement of each task.
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "target/target.h"
#include "records/record.h"

namespace tessera::records {

// True when `a` is a better measurement than `b`: a confirmed record beats an
// unconfirmed one; otherwise the lower MeasureResult::rank_cost(), and on a
// tie the earlier timestamp. Both must be valid().
bool better(const Record& a, const Record& b);

// One record per workload_key and target match key (see target_match.h: the
// vector ISA, width and threads, not the exact feature string): the best
// valid() one. Pairs with no valid record are left out. Output is in order of
// each pair's first line.
std::vector<Record> pick_best(const std::vector<Record>& records);

// Reads `in_path` (skipping damaged lines with warnings) and writes the best
// records to `out_path`, replacing it; out_path must be another file (a log
// is never shrunk in place: nothing recorded is lost). With
// `target`, only records that apply to it are considered.
// Returns the number of records written.
size_t pick_best_file(const std::string& in_path, const std::string& out_path, std::ostream& warnings,
                      const std::optional<target::Target>& target = std::nullopt);

}  // namespace tessera::records
