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

}  // namespace

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
    ShippedLog log{path, {}, 0};
    RecordTargets targets;
    std::set<std::string> keys;
    for (const Record& r : load_records(path, warnings)) {
      ++log.records;
      keys.insert(targets.match_key(r));
    }
    log.targets.assign(keys.begin(), keys.end());
    out.push_back(std::move(log));
  }
  return out;
}

ShippedRecords shipped_records_for(const std::string& dir, const target::Target& target, std::ostream& warnings) {
  ShippedRecords out;
  for (const std::string& path : logs_in(dir)) {
    std::vector<Record> matching = records_for_target(load_records(path, warnings), target);
    if (matching.empty()) continue;
    out.logs.push_back(path);
    out.records.insert(out.records.end(), matching.begin(), matching.end());
  }
  return out;
}

}  // namespace tessera::records
