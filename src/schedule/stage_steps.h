#pragma once
// The schedule steps that add a stage: cache_write, cache_read and rfactor
// (schedule/step.h says what each makes). trace.h's apply() calls them.
#include "schedule/state.h"

namespace tessera::schedule {

void apply_cache_write(State& state, const CacheWriteStep& step);
void apply_cache_read(State& state, const CacheReadStep& step);
void apply_rfactor(State& state, const RfactorStep& step);

}  // namespace tessera::schedule
