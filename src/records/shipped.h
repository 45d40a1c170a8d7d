#pragma once
// Pre-tuned records shipped with Tessera (TVM's "tophub"): the best record
// of every task of the zoo's networks, tuned on the targets the benchmarks
// ran on, in logs under share/records of the source tree (one per target,
// machine and thread count, each line carrying its target as every record
// does). A compile given no records of its own uses those whose target
// matches its own (target::same_code_target), so a new user's first compile
// is tuned.
//
// Several machines' logs may share a target (AVX-512 tuned on a Xeon and on
// a Zen 4): a compile takes one machine's, the nearest to its own CPU (the
// same CPU, else one of the same vendor). The best schedule of one machine
// is not another's (a Xeon's 2 MB of L2 per core against a Zen 4's 1 MB; a
// Zen 4 runs a 512-bit vector as two halves), and one machine's times are
// not on another's scale, so their records never mix.
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
  std::vector<std::string> cpus;     // the distinct CPUs (-mcpu) they were tuned on
  size_t records = 0;
};

// Every log in `dir` (.log files, sorted by name); damaged lines are
// reported to `warnings` and skipped, as in any log.
std::vector<ShippedLog> list_shipped(const std::string& dir, std::ostream& warnings);

// The shipped records that apply to `target`, from the logs of the one
// machine nearest to it (above), and the logs they came from.
struct ShippedRecords {
  std::vector<Record> records;
  std::vector<std::string> logs;
  std::string cpu;  // the CPU they were tuned on (-mcpu; empty for GPUs)

  // Where they came from, for a note: "llvm-avx512-zen4-threads2.log, tuned
  // on znver4" (the logs' file names, then the CPU where there is one).
  std::string sources() const;
};
ShippedRecords shipped_records_for(const std::string& dir, const target::Target& target, std::ostream& warnings);

// How near records tuned on CPU `tuned_on` are to one of CPU `cpu` (LLVM CPU
// names): 2 the same CPU, 1 the same vendor (AMD's znver*, bdver*, btver*
// against Intel's), 0 otherwise (or either unnamed).
int cpu_nearness(const std::string& tuned_on, const std::string& cpu);

}  // namespace tessera::records
