#pragma once
// Pre-tuned records shipped with Tessera (TVM's "tophub"): the best record
// of every task of the zoo's networks, tuned on the targets the benchmarks
// ran on, in logs under share/records of the source tree (one per target and
// thread count, each line carrying its target as every record does). A
// compile given no records of its own uses those whose target matches its
// own (target::same_code_target), so a new user's first compile is tuned.
#include <ostream>
#include <string>
#include <vector>

#include "records/record.h"
#include "target/target.h"

namespace tessera::records {

// Where the build found them (the source tree's share/records).
std::string shipped_records_dir();

struct ShippedLog {
  std::string path;
  std::vector<std::string> targets;  // the distinct match keys of its records
  size_t records = 0;
};

// Every log in `dir` (.log files, sorted by name); damaged lines are
// reported to `warnings` and skipped, as in any log.
std::vector<ShippedLog> list_shipped(const std::string& dir, std::ostream& warnings);

// The shipped records that apply to `target`, and the logs they came from.
struct ShippedRecords {
  std::vector<Record> records;
  std::vector<std::string> logs;
};
ShippedRecords shipped_records_for(const std::string& dir, const target::Target& target, std::ostream& warnings);

}  // namespace tessera::records
