#pragma once
// The module globals through which generated kernels reach the runtime: a
// parallel loop calls through `tessera_parallel_for_ptr`, a large scratch
// buffer comes from `tessera_workspace_alloc_ptr` and goes back through
// `tessera_workspace_free_ptr` (codegen/llvm_codegen.h). Every loader of
// kernels points them at the runtime with bind_kernel_globals.
#include <functional>

namespace tessera::runtime {

inline constexpr const char* kParallelForGlobal = "tessera_parallel_for_ptr";
inline constexpr const char* kWorkspaceAllocGlobal = "tessera_workspace_alloc_ptr";
inline constexpr const char* kWorkspaceFreeGlobal = "tessera_workspace_free_ptr";

// `find(name)`: the address of the loaded module's global, or null when the
// module has none (a kernel without parallel loops or scratch buffers).
void bind_kernel_globals(const std::function<void*(const char*)>& find);

}  // namespace tessera::runtime
