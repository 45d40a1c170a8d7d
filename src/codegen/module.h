#pragma once
// A loaded kernel library: from an object file (JIT-linked in this process) or
// from a shared object on disk.
#include <memory>
#include <string>

#include "codegen/shared_object.h"  // write_shared_object, which load_shared_object reads

namespace tessera::codegen {

using KernelFn = int (*)(void** args);

class Module {
 public:
  // Links an object file produced by compile_to_object into this process.
  static Module load_object(const std::string& object_bytes);
  // dlopen()s a shared object written by write_shared_object.
  static Module load_shared_object(const std::string& path);

  KernelFn function(const std::string& name) const;  // throws tessera::Error when absent

  Module(Module&&) noexcept;
  Module& operator=(Module&&) noexcept;
  ~Module();

 private:
  struct Impl;
  explicit Module(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::codegen
