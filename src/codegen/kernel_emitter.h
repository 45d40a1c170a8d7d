#pragma once
// One kernel's loop IR as an LLVM function in `module` (the ABI of
// codegen/llvm_codegen.h): what the schedule says, written out; llvm_codegen
// then optimises and emits the module.
#include "target/target.h"
#include "tir/stmt.h"

namespace llvm {
class Module;
}

namespace tessera::codegen {

using target::Target;

// Throws tessera::Error when the loops use what the emitter cannot write.
void emit_kernel(llvm::Module& module, const Target& target, const tir::LoweredFunc& f);

}  // namespace tessera::codegen
