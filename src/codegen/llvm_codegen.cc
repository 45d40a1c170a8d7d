// Loop IR -> LLVM IR -> object code: the kernel emitter (codegen/
// kernel_emitter.h) writes the schedule's code, LLVM's own unroller and
// vectorisers stay off, and what remains for its O2 is clean-up: constant
// folding, SROA of small scratch tiles into registers, loop-invariant code
// motion, instruction selection (FMA), register allocation.
#include "codegen/llvm_codegen.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>

#include <memory>
#include <mutex>

#include "codegen/kernel_emitter.h"
#include "tessera/error.h"
#include "tir/lower.h"

namespace tessera::codegen {
namespace {

void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

// --- Driving LLVM ----------------------------------------------------------

Target resolve(const Target& target) {
  if (target.kind != "llvm") throw Error("codegen: target '" + target.str() + "' is not a CPU target");
  // A Target{} names no CPU: compile for this machine.
  if (target.cpu.empty() && target.features.empty()) return Target::host();
  return target;
}

std::unique_ptr<llvm::TargetMachine> make_target_machine(const Target& target, int opt_level) {
  initialize_llvm();
  std::string triple = llvm::sys::getProcessTriple();
  std::string error;
  const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (llvm_target == nullptr) throw Error("codegen: no LLVM target for " + triple + ": " + error);
  auto level = opt_level <= 0 ? llvm::CodeGenOpt::None
               : opt_level == 1 ? llvm::CodeGenOpt::Less
               : opt_level == 2 ? llvm::CodeGenOpt::Default
                                : llvm::CodeGenOpt::Aggressive;
  // PIC, so that an object can also be linked into a shared library.
  std::unique_ptr<llvm::TargetMachine> tm(llvm_target->createTargetMachine(
      triple, target.cpu, target.features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      llvm::CodeModel::Small, level));
  if (!tm) throw Error("codegen: cannot create a target machine for '" + target.str() + "'");
  return tm;
}

void optimize(llvm::Module& module, llvm::TargetMachine& tm, int opt_level) {
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = false;  // the schedule unrolls
  tuning.LoopVectorization = false;  // the schedule vectorises
  tuning.SLPVectorization = false;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(&tm, tuning);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes;
  switch (opt_level) {
    case 0: passes = builder.buildO0DefaultPipeline(llvm::OptimizationLevel::O0); break;
    case 1: passes = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O1); break;
    case 2: passes = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2); break;
    default: passes = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3); break;
  }
  passes.run(module, mam);
}

// One compilation: its own context, so that threads can compile concurrently.
struct Compilation {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module;
  std::unique_ptr<llvm::TargetMachine> machine;

  Compilation(const tir::LoweredFunc& f, const Target& requested, const CompileOptions& options) {
    Target target = resolve(requested);
    machine = make_target_machine(target, options.opt_level);
    module = std::make_unique<llvm::Module>(f.name, context);
    module->setTargetTriple(machine->getTargetTriple().str());
    module->setDataLayout(machine->createDataLayout());
    emit_kernel(*module, target, tir::prepare_for_codegen(f));
    std::string problems;
    llvm::raw_string_ostream problem_stream(problems);
    if (llvm::verifyModule(*module, &problem_stream)) {
      throw Error("codegen: invalid LLVM IR for kernel '" + f.name + "': " + problem_stream.str());
    }
    optimize(*module, *machine, options.opt_level);
  }

  std::string emit_file(llvm::CodeGenFileType type) {
    llvm::SmallVector<char, 0> bytes;
    llvm::raw_svector_ostream stream(bytes);
    llvm::legacy::PassManager passes;
    if (machine->addPassesToEmitFile(passes, stream, nullptr, type)) {
      throw Error("codegen: the target cannot emit this file type");
    }
    passes.run(*module);
    return std::string(bytes.begin(), bytes.end());
  }
};

}  // namespace

std::string compile_to_object(const tir::LoweredFunc& f, const Target& target, const CompileOptions& options) {
  return Compilation(f, target, options).emit_file(llvm::CGFT_ObjectFile);
}

std::string emit_llvm_ir(const tir::LoweredFunc& f, const Target& target, const CompileOptions& options) {
  Compilation c(f, target, options);
  std::string text;
  llvm::raw_string_ostream stream(text);
  c.module->print(stream, nullptr);
  return stream.str();
}

std::string emit_assembly(const tir::LoweredFunc& f, const Target& target, const CompileOptions& options) {
  return Compilation(f, target, options).emit_file(llvm::CGFT_AssemblyFile);
}

}  // namespace tessera::codegen
