#include "runtime/kernel_globals.h"

#include <cstdint>

#include "runtime/thread_pool.h"
#include "runtime/workspace.h"

namespace tessera::runtime {

void bind_kernel_globals(const std::function<void*(const char*)>& find) {
  using ParallelForFn = void (*)(ParallelBody, void*, int64_t);
  using AllocFn = void* (*)(int64_t);
  using FreeFn = void (*)(void*);
  if (void* g = find(kParallelForGlobal)) *static_cast<ParallelForFn*>(g) = &parallel_for;
  if (void* g = find(kWorkspaceAllocGlobal)) *static_cast<AllocFn*>(g) = &workspace_alloc;
  if (void* g = find(kWorkspaceFreeGlobal)) *static_cast<FreeFn*>(g) = &workspace_free;
}

}  // namespace tessera::runtime
