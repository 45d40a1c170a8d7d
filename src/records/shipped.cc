#include "records/shipped.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "records/log_file.h"
#include "records/target_match.h"

namespace tessera::records {

namespace {

std::vector<std::string> logs_in(const std::string& dir) {
  std::vector<std::string> logs;
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_directory(dir, ec)) return logs;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".log") logs.push_back(entry.path().string());
  std::sort(logs.begin(), logs.end());
  return logs;
}

// The vendor of an LLVM x86 CPU name; "" for the generic ones.
std::string cpu_vendor(const std::string& cpu) {
  if (cpu.empty() || cpu.rfind("x86-64", 0) == 0 || cpu == "generic") return "";
  for (const char* amd : {"znver", "bdver", "btver", "amdfam", "barcelona", "k8", "athlon", "opteron"})
    if (cpu.rfind(amd, 0) == 0) return "amd";
  return "intel";
}

// The CPU one of a log's records was tuned on ("" for a GPU target, or one
// that does not parse).
std::string cpu_of(RecordTargets& targets, const Record& r) {
  const target::Target* t = targets.of(r);
  return t && t->kind == "llvm" ? t->cpu : "";
}

}  // namespace

int cpu_nearness(const std::string& tuned_on, const std::string& cpu) {
  if (tuned_on.empty() || cpu.empty()) return 0;
  if (tuned_on == cpu) return 2;
  const std::string vendor = cpu_vendor(cpu);
  return !vendor.empty() && vendor == cpu_vendor(tuned_on) ? 1 : 0;
}

std::string ShippedRecords::sources() const {
  std::string out;
  for (const std::string& l : logs) out += (out.empty() ? "" : ", ") + std::filesystem::path(l).filename().string();
  return cpu.empty() ? out : out + ", tuned on " + cpu;
}

std::string shipped_records_dir() {
#ifdef TESSERA_SHIPPED_RECORDS
  return TESSERA_SHIPPED_RECORDS;
#else
  return "";
#endif
}

std::vector<ShippedLog> list_shipped(const std::string& dir, std::ostream& warnings) {
  std::vector<ShippedLog> out;
  for (const std::string& path : logs_in(dir)) {
    ShippedLog log{path, {}, {}, 0};
    RecordTargets targets;
    std::set<std::string> keys, cpus;
    for (const Record& r : load_records(path, warnings)) {
      ++log.records;
      keys.insert(targets.match_key(r));
      if (std::string cpu = cpu_of(targets, r); !cpu.empty()) cpus.insert(cpu);
    }
    log.targets.assign(keys.begin(), keys.end());
    log.cpus.assign(cpus.begin(), cpus.end());
    out.push_back(std::move(log));
  }
  return out;
}

ShippedRecords shipped_records_for(const std::string& dir, const target::Target& target, std::ostream& warnings) {
  // Each log's records for the target, with the CPU they were tuned on
  // (a log is one machine's: its first matching record's CPU) and how near
  // that is to the target's.
  struct Candidate {
    std::string path, cpu;
    int nearness;
    std::vector<Record> records;
  };
  std::vector<Candidate> candidates;
  RecordTargets targets;
  int nearest = -1;
  for (const std::string& path : logs_in(dir)) {
    std::vector<Record> matching = records_for_target(load_records(path, warnings), target);
    if (matching.empty()) continue;
    std::string cpu = cpu_of(targets, matching.front());
    const int nearness = cpu_nearness(cpu, target.cpu);
    nearest = std::max(nearest, nearness);
    candidates.push_back({path, std::move(cpu), nearness, std::move(matching)});
  }
  // The nearest machine's logs; between machines equally near, the first
  // log's (by name).
  ShippedRecords out;
  for (const Candidate& c : candidates) {
    if (c.nearness != nearest || (!out.logs.empty() && c.cpu != out.cpu)) continue;
    out.cpu = c.cpu;
    out.logs.push_back(c.path);
    out.records.insert(out.records.end(), c.records.begin(), c.records.end());
  }
  return out;
}

}  // namespace tessera::records
