#pragma once
// The schedule steps that add a stage: cache_write, cache_read and rfactor
// (schedule/step.h says what each makes). trace.h's apply() calls them.
#include "schedule/state.h"

namespace tessera::schedule {

void apply_cache_write(State& state, const CacheWriteStep& step);
// The stages these steps add, recognised by what the steps mark on them.
bool is_cache_write_local(const ir::TensorNode& t);  // "<stage>.local"
bool is_cache_read_copy(const ir::TensorNode& t);    // "<tensor>.cache"
// The scope a cache stage's buffer was given ("shared", "local"), or "".
std::string memory_scope(const ir::TensorNode& t);
void apply_cache_read(State& state, const CacheReadStep& step);
void apply_rfactor(State& state, const RfactorStep& step);

}  // namespace tessera::schedule
