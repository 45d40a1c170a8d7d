#pragma once
// Loop IR -> LLVM IR -> machine code for a CPU target.
//
// Kernel ABI: extern "C" int32_t NAME(void** args), args in LoweredFunc::args
// order, each a pointer to a row-major fp32 buffer; returns 0. Parallel loops
// and scratch buffers beyond the stack's share call through module globals
// that the loader (codegen/module.h) points at the runtime
// (runtime/kernel_globals.h).
#include <string>

#include "target/target.h"
#include "tir/stmt.h"

namespace tessera::codegen {

using target::Target;

struct CompileOptions {
  int opt_level = 2;  // LLVM's own loop unrolling and vectorisation stay off: the schedule decides
};

// A relocatable ELF object holding the kernel. Throws tessera::Error.
std::string compile_to_object(const tir::LoweredFunc& f, const Target& target,
                              const CompileOptions& options = {});
// The optimised LLVM IR as text (for debugging and tests).
std::string emit_llvm_ir(const tir::LoweredFunc& f, const Target& target,
                         const CompileOptions& options = {});
// Host assembly (for inspecting register blocking and FMA use).
std::string emit_assembly(const tir::LoweredFunc& f, const Target& target,
                          const CompileOptions& options = {});

}  // namespace tessera::codegen
