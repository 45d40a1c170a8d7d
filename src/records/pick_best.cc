#include "records/pick_best.h"

#include <filesystem>
#include <map>
#include <system_error>
#include <utility>

#include "records/log_file.h"
#include "records/target_match.h"
#include "tessera/error.h"

namespace tessera::records {

bool better(const Record& a, const Record& b) {
  if (a.confirmed != b.confirmed) return a.confirmed;
  double ca = a.result.rank_cost(), cb = b.result.rank_cost();
  if (ca != cb) return ca < cb;
  return a.result.timestamp < b.result.timestamp;
}

std::vector<Record> pick_best(const std::vector<Record>& records) {
  // Slot per (key, target match key) in first-seen order, so the output is stable.
  std::map<std::pair<std::string, std::string>, size_t> slot_of;
  std::vector<const Record*> best;
  RecordTargets targets;
  for (const Record& r : records) {
    if (!r.valid()) continue;
    auto [it, inserted] = slot_of.try_emplace({r.workload_key, targets.match_key(r)}, best.size());
    if (inserted) {
      best.push_back(&r);
    } else if (better(r, *best[it->second])) {
      best[it->second] = &r;
    }
  }
  std::vector<Record> out;
  out.reserve(best.size());
  for (const Record* r : best) out.push_back(*r);
  return out;
}

size_t pick_best_file(const std::string& in_path, const std::string& out_path, std::ostream& warnings,
                      const std::optional<target::Target>& target) {
  std::error_code ec;
  if (in_path == out_path || std::filesystem::equivalent(in_path, out_path, ec))
    throw Error("pick-best: the output " + out_path +
                " is the input log; writing there would drop every record "
                "but the best (write to another file)");
  std::vector<Record> records = load_records(in_path, warnings);
  if (target) records = records_for_target(std::move(records), *target);
  std::vector<Record> best = pick_best(records);
  write_records(out_path, best);
  return best.size();
}

}  // namespace tessera::records
