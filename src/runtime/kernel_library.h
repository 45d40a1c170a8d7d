#pragma once
// The compiled kernels of a model, loaded from the bytes of a shared object
// (an artifact holds them). Needs only the dynamic loader: no LLVM. Parallel
// loops of the kernels run on this process's thread pool (thread_pool.h).
#include <memory>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::runtime {

// The kernel ABI of codegen: buffers in the kernel's argument order; 0 on success.
using Kernel = int (*)(void** args);

class KernelLibrary {
 public:
  // `source` names the bytes' origin in errors (the artifact's path).
  static KernelLibrary from_shared_object(const std::string& bytes, const std::string& source);

  Kernel kernel(const std::string& name) const;  // throws tessera::Error naming a missing kernel
  // The kernel's argument count, then each argument's element count, as
  // codegen exported them ("NAME.signature"); throws when there is none.
  std::vector<int64_t> signature(const std::string& name) const;

  KernelLibrary(KernelLibrary&&) noexcept;
  KernelLibrary& operator=(KernelLibrary&&) noexcept;
  ~KernelLibrary();

 private:
  KernelLibrary() = default;
  void release();
  // The library's own symbol `name` (null when absent); throws when dlsym
  // finds it in a dependency instead (libc's abort, say).
  void* own_symbol(const std::string& name) const;
  void* handle_ = nullptr;
  // The in-memory file dlopen loaded, open while the library is: glibc's
  // dlopen hands back an already loaded object of the same path, and a
  // closed descriptor's number (/proc/self/fd/N) is the next one's.
  int fd_ = -1;
  std::string source_;
};

}  // namespace tessera::runtime
