#include "schedule/pipelined_steps.h"

#include <set>
#include <utility>

#include "schedule/iter_names.h"

namespace tessera::schedule {

Trace pipelined_steps(const Trace& trace) {
  std::set<std::string> shared_copies;
  std::set<std::pair<std::string, std::string>> steps, annotated;
  for (const Step& step : trace.steps()) {
    if (const auto* c = std::get_if<CacheReadStep>(&step); c && c->scope == "shared")
      shared_copies.insert(cache_read_name(c->tensor));
    if (const auto* at = std::get_if<ComputeAtStep>(&step); at && shared_copies.count(at->stage))
      steps.insert({at->target_stage, at->target_iter});
    if (const auto* a = std::get_if<AnnotateStep>(&step); a && a->annotation == Annotation::Pipeline)
      annotated.insert({a->stage, a->iter});
  }
  Trace out = trace;
  for (const auto& [stage, iter] : steps)
    if (!annotated.count({stage, iter})) out.annotate(stage, iter, Annotation::Pipeline);
  return out;
}

}  // namespace tessera::schedule
