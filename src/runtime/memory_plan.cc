#include "runtime/memory_plan.h"

#include <algorithm>

namespace tessera::runtime {

MemoryPlan plan_memory(const ExecutableGraph& g, bool keep_every_tensor) {
  const int n = static_cast<int>(g.tensors.size());
  MemoryPlan plan;
  plan.offset.assign(n, -1);
  plan.storage.assign(n, -1);

  enum class Role { Intermediate, Constant, Pinned };  // Pinned: inputs and outputs
  // Views share their root's storage: roles and lifetimes are the root's.
  std::vector<Role> role(n, Role::Intermediate);
  for (int t : g.constants) role[t] = Role::Constant;
  for (int t : g.inputs) role[t] = Role::Pinned;
  for (int t : g.outputs)
    if (role[g.storage_root(t)] != Role::Constant) role[g.storage_root(t)] = Role::Pinned;
  if (keep_every_tensor)
    for (Role& r : role)
      if (r == Role::Intermediate) r = Role::Pinned;

  std::vector<int> last_read(n, -1);
  for (int c = 0; c < static_cast<int>(g.calls.size()); ++c)
    for (int t : g.calls[c].inputs) last_read[g.storage_root(t)] = c;

  std::vector<int> free_storages;
  auto open_storage = [&](int64_t bytes) {
    plan.storage_bytes.push_back(bytes);
    return static_cast<int>(plan.storage_bytes.size()) - 1;
  };
  auto take_storage = [&](int t) {
    const int64_t bytes = MemoryPlan::aligned(g.num_elements(t) * g.element_bytes(t));
    if (role[t] == Role::Pinned) return open_storage(bytes);
    plan.unplanned_activation_bytes += bytes;
    auto best = free_storages.end();
    for (auto it = free_storages.begin(); it != free_storages.end(); ++it) {
      const int64_t have = plan.storage_bytes[*it];
      if (best == free_storages.end()) {
        best = it;
        continue;
      }
      const int64_t best_have = plan.storage_bytes[*best];
      const bool fits = have >= bytes, best_fits = best_have >= bytes;
      // Prefer a storage that fits, the tightest; else the largest, to grow.
      if (fits && (!best_fits || have < best_have)) best = it;
      if (!fits && !best_fits && have > best_have) best = it;
    }
    if (best == free_storages.end()) return open_storage(bytes);
    const int s = *best;
    free_storages.erase(best);
    plan.storage_bytes[s] = std::max(plan.storage_bytes[s], bytes);
    return s;
  };

  for (int t : g.inputs) plan.storage[t] = take_storage(t);
  for (int c = 0; c < static_cast<int>(g.calls.size()); ++c) {
    const auto& call = g.calls[c];
    for (int t : call.outputs) plan.storage[t] = take_storage(t);
    // An output nobody reads is dead at once, and so is each input read for
    // the last time; both free their storage after this call.
    auto release = [&](int t) {
      if (role[t] == Role::Intermediate && last_read[t] <= c &&
          std::find(free_storages.begin(), free_storages.end(), plan.storage[t]) == free_storages.end())
        free_storages.push_back(plan.storage[t]);
    };
    for (int t : call.inputs) release(g.storage_root(t));
    for (int t : call.outputs) release(t);
  }

  std::vector<int64_t> storage_offset(plan.storage_bytes.size());
  std::vector<bool> intermediate(plan.storage_bytes.size(), true);
  for (int t = 0; t < n; ++t)
    if (role[t] == Role::Pinned && plan.storage[t] >= 0) intermediate[plan.storage[t]] = false;
  for (size_t s = 0; s < plan.storage_bytes.size(); ++s) {
    storage_offset[s] = plan.arena_bytes;
    plan.arena_bytes += plan.storage_bytes[s];
    if (intermediate[s]) plan.activation_bytes += plan.storage_bytes[s];
  }
  for (int t = 0; t < n; ++t) {
    const int root = g.storage_root(t);
    plan.storage[t] = plan.storage[root];
    if (plan.storage[t] >= 0) plan.offset[t] = storage_offset[plan.storage[t]];
  }
  return plan;
}

}  // namespace tessera::runtime
