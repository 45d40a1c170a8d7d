#pragma once
// Which records apply to a target. A record names its target as text
// (target::Target::str()); target::same_code_target decides whether tuning
// on one target holds for another: kind, vector ISA and width, and threads
// agree, where a record written before targets carried -threads= (threads not
// stated) applies to any thread count.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "target/target.h"
#include "records/record.h"

namespace tessera::records {

// The targets of records, each distinct text parsed once: a log repeats one
// text thousands of times, and parsing asks LLVM.
class RecordTargets {
 public:
  // The record's target, or nullptr when its text does not parse (a damaged
  // or foreign log): such a record applies to no target.
  const target::Target* of(const Record& r);
  // What records are grouped by: the target's match_key(), or the text
  // itself when it does not parse.
  std::string match_key(const Record& r);
  bool applies(const Record& r, const target::Target& wanted);

 private:
  std::map<std::string, std::optional<target::Target>> parsed_;
};

// The records that apply to `target`, in log order.
std::vector<Record> records_for_target(std::vector<Record> records, const target::Target& target);

// For notes when `recorded` applies to `wanted` only because one of them states
// no thread count, e.g. "recorded with no thread count (a log from before
// records carried -threads=), used for threads=2"; empty when the counts agree.
std::string loose_thread_match(const target::Target& recorded, const target::Target& wanted);

}  // namespace tessera::records
