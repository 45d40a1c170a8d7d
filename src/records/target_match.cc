#include "records/target_match.h"

#include "tessera/error.h"

namespace tessera::records {

const target::Target* RecordTargets::of(const Record& r) {
  auto [it, inserted] = parsed_.try_emplace(r.target);
  if (inserted) {
    try {
      it->second = target::Target::parse(r.target);
    } catch (const Error&) {
      // Left empty: matches nothing, and pick-best keeps it apart by its text.
    }
  }
  return it->second ? &*it->second : nullptr;
}

std::string RecordTargets::match_key(const Record& r) {
  const target::Target* t = of(r);
  return t ? t->match_key() : r.target;
}

bool RecordTargets::applies(const Record& r, const target::Target& wanted) {
  const target::Target* t = of(r);
  return t && target::same_code_target(*t, wanted);
}

std::vector<Record> records_for_target(std::vector<Record> records, const target::Target& target) {
  RecordTargets targets;
  std::erase_if(records, [&](const Record& r) { return !targets.applies(r, target); });
  return records;
}

std::string loose_thread_match(const target::Target& recorded, const target::Target& wanted) {
  // A GPU's kernels run on its own threads: the host's count means nothing to them.
  if (recorded.threads == wanted.threads || recorded.is_gpu()) return "";
  if (recorded.threads == 0)
    return "recorded with no thread count (a log from before records carried -threads=), used for threads=" +
           std::to_string(wanted.threads);
  return "recorded with threads=" + std::to_string(recorded.threads) +
         ", used for a target that states no thread count";
}

}  // namespace tessera::records
