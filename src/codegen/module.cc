// Loading compiled kernels into the process: JIT-linking objects with ORC, or
// dlopen()ing shared objects. Either way, kernels reach the runtime's thread
// pool and scratch buffers through the module's globals (runtime/kernel_globals.h).
#include "codegen/module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>

#include <cstdlib>
#include <mutex>

#include "runtime/kernel_globals.h"
#include "tessera/error.h"

namespace tessera::codegen {
namespace {

std::string message_of(llvm::Error error) { return llvm::toString(std::move(error)); }

// One JIT per process, built on first use. Like the thread pool, a forked
// child builds its own instead of touching the parent's (its locks may have
// been held by threads that do not exist in the child).
class Jit {
 public:
  static Jit& instance() {
    static std::mutex creation_mutex;
    static Jit* jit = nullptr;
    static pid_t owner = 0;
    std::lock_guard<std::mutex> lock(creation_mutex);
    if (jit == nullptr || owner != getpid()) {
      jit = new Jit();  // never destroyed: modules may be unloaded during static destruction
      owner = getpid();
    }
    return *jit;
  }

  llvm::orc::LLJIT& lljit() { return *lljit_; }
  std::mutex& mutex() { return mutex_; }

 private:
  Jit() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto created = llvm::orc::LLJITBuilder().create();
    if (!created) throw Error("cannot start the JIT: " + message_of(created.takeError()));
    lljit_ = std::move(*created);
  }

  std::unique_ptr<llvm::orc::LLJIT> lljit_;
  std::mutex mutex_;
};

// Code loaded into this process, whichever way.
class LoadedLibrary {
 public:
  virtual ~LoadedLibrary() = default;
  virtual void* find(const std::string& name) = 0;  // null when absent
};

// Each module gets its own JITDylib: every candidate kernel of a task may have
// the same name, and each object defines its own parallel-for global.
class JitModule : public LoadedLibrary {
 public:
  explicit JitModule(const std::string& object_bytes) : jit_(Jit::instance()) {
    std::lock_guard<std::mutex> lock(jit_.mutex());
    llvm::orc::LLJIT& lljit = jit_.lljit();
    static uint64_t counter = 0;
    auto dylib = lljit.createJITDylib("tessera.module." + std::to_string(counter++));
    if (!dylib) throw Error("cannot load kernel object: " + message_of(dylib.takeError()));
    dylib_ = &*dylib;
    // Generated code calls memset, malloc, expf, tanhf...: resolve them in this process.
    auto process_symbols = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        lljit.getDataLayout().getGlobalPrefix());
    if (!process_symbols) throw Error("cannot load kernel object: " + message_of(process_symbols.takeError()));
    dylib_->addGenerator(std::move(*process_symbols));

    tracker_ = dylib_->createResourceTracker();
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(object_bytes, "tessera-kernel.o");
    if (llvm::Error e = lljit.addObjectFile(tracker_, std::move(buffer))) {
      unload();
      throw Error("cannot load kernel object: " + message_of(std::move(e)));
    }
    // Looking the globals up links the object now, so link errors surface here.
    runtime::bind_kernel_globals([&](const char* name) -> void* {
      auto global = lljit.lookup(*dylib_, name);
      if (global) return global->toPtr<void*>();
      llvm::consumeError(global.takeError());  // a kernel without parallel loops or scratch buffers
      return nullptr;
    });
  }

  ~JitModule() override {
    std::lock_guard<std::mutex> lock(jit_.mutex());
    unload();
  }

  void* find(const std::string& name) override {
    std::lock_guard<std::mutex> lock(jit_.mutex());
    auto address = jit_.lljit().lookup(*dylib_, name);
    if (!address) {
      llvm::consumeError(address.takeError());
      return nullptr;
    }
    return address->toPtr<void*>();
  }

 private:
  // Frees the code and data of this module (thousands of candidates are loaded in turn).
  void unload() {
    if (tracker_) llvm::consumeError(tracker_->remove());
    tracker_ = nullptr;
    if (dylib_) llvm::consumeError(jit_.lljit().getExecutionSession().removeJITDylib(*dylib_));
    dylib_ = nullptr;
  }

  Jit& jit_;
  llvm::orc::JITDylib* dylib_ = nullptr;
  llvm::orc::ResourceTrackerSP tracker_;
};

class SharedObjectModule : public LoadedLibrary {
 public:
  explicit SharedObjectModule(const std::string& path) {
    // RTLD_LOCAL: each library keeps its own kernel names and parallel-for global.
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) throw Error("cannot load shared object '" + path + "': " + dlerror());
    runtime::bind_kernel_globals([&](const char* name) { return dlsym(handle_, name); });
  }
  ~SharedObjectModule() override { dlclose(handle_); }
  void* find(const std::string& name) override { return dlsym(handle_, name.c_str()); }

 private:
  void* handle_ = nullptr;
};


}  // namespace

struct Module::Impl {
  std::unique_ptr<LoadedLibrary> library;
};

Module::Module(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Module::Module(Module&&) noexcept = default;
Module& Module::operator=(Module&&) noexcept = default;
Module::~Module() = default;

Module Module::load_object(const std::string& object_bytes) {
  return Module(std::make_unique<Impl>(Impl{std::make_unique<JitModule>(object_bytes)}));
}

Module Module::load_shared_object(const std::string& path) {
  return Module(std::make_unique<Impl>(Impl{std::make_unique<SharedObjectModule>(path)}));
}

KernelFn Module::function(const std::string& name) const {
  void* address = impl_ ? impl_->library->find(name) : nullptr;
  if (address == nullptr) throw Error("module has no function '" + name + "'");
  return reinterpret_cast<KernelFn>(address);
}

}  // namespace tessera::codegen
