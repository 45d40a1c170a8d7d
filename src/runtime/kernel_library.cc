#include "runtime/kernel_library.h"

#include "support/fd_io.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <tuple>
#include <utility>

#include "runtime/kernel_globals.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::runtime {
namespace {

// dlopen needs a path: an anonymous in-memory file, so nothing is left on
// disk. Returns the handle and the file's descriptor, which must stay open
// as long as the handle (see KernelLibrary::fd_).
std::pair<void*, int> open_from_memory(const std::string& bytes, const std::string& source) {
  int fd = memfd_create("tessera-kernels", MFD_CLOEXEC);
  if (fd < 0) throw Error(source + ": cannot create an in-memory file for the kernels");
  if (!support::write_all(fd, bytes)) {
    close(fd);
    throw Error(source + ": cannot write the kernels to memory");
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  // RTLD_LOCAL: each model keeps its own kernel names and parallel-for global.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    close(fd);
    const char* why = dlerror();
    throw Error(source + ": cannot load the kernels: " + (why ? why : "unknown loader error"));
  }
  return {handle, fd};
}

}  // namespace

KernelLibrary KernelLibrary::from_shared_object(const std::string& bytes, const std::string& source) {
  KernelLibrary lib;
  lib.source_ = source;
  std::tie(lib.handle_, lib.fd_) = open_from_memory(bytes, source);
  bind_kernel_globals([&](const char* name) { return dlsym(lib.handle_, name); });
  return lib;
}

void* KernelLibrary::own_symbol(const std::string& name) const {
  void* address = handle_ ? dlsym(handle_, name.c_str()) : nullptr;
  if (address == nullptr) return nullptr;
  // dlsym also finds the library's dependencies' symbols: a graph naming
  // "abort" or "memcpy" would call libc's. Only the library's own count.
  Dl_info info{};
  struct link_map* own = nullptr;
  if (dladdr(address, &info) == 0 || dlinfo(handle_, RTLD_DI_LINKMAP, &own) != 0 || own == nullptr ||
      info.dli_fname == nullptr || std::string(info.dli_fname) != own->l_name)
    throw Error(source_ + ": " + support::quoted(name) + " is not a kernel of its library");
  return address;
}

Kernel KernelLibrary::kernel(const std::string& name) const {
  void* address = own_symbol(name);
  if (address == nullptr) throw Error(source_ + ": no kernel " + support::quoted(name) + " in its library");
  return reinterpret_cast<Kernel>(address);
}

std::vector<int64_t> KernelLibrary::signature(const std::string& name) const {
  constexpr uint64_t kMaxArguments = 4096;
  const auto* words = static_cast<const uint64_t*>(own_symbol(name + ".signature"));
  if (words == nullptr || words[0] > kMaxArguments)
    throw Error(source_ + ": kernel " + support::quoted(name) + " has no signature (not compiled by this Tessera)");
  return std::vector<int64_t>(words + 1, words + 1 + words[0]);
}

KernelLibrary::KernelLibrary(KernelLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      fd_(std::exchange(other.fd_, -1)),
      source_(std::move(other.source_)) {}

KernelLibrary& KernelLibrary::operator=(KernelLibrary&& other) noexcept {
  if (this != &other) {
    release();
    handle_ = std::exchange(other.handle_, nullptr);
    fd_ = std::exchange(other.fd_, -1);
    source_ = std::move(other.source_);
  }
  return *this;
}

KernelLibrary::~KernelLibrary() { release(); }

void KernelLibrary::release() {
  if (handle_) dlclose(handle_);
  if (fd_ >= 0) close(fd_);
  handle_ = nullptr;
  fd_ = -1;
}

}  // namespace tessera::runtime
