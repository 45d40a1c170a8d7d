#pragma once
// The Tessera side of a comparison with oneDNN: one workload's kernel compiled
// under a schedule and JIT-linked into this process, with random inputs
// (measure::make_inputs, the same every run) and its output buffer ready, so
// that run() is the kernel call alone.
#include <string>
#include <vector>

#include "codegen/module.h"
#include "target/target.h"
#include "measure/kernel_args.h"
#include "ops/workload.h"
#include "runtime/ndarray.h"
#include "schedule/trace.h"
#include "tir/stmt.h"

namespace tessera::baseline {

// How far a kernel's output is from the reference. The relative error is
// normwise (max |got - want| / max |want|): an elementwise one explodes where
// the reference is near zero, which sums of thousands of products often are.
struct CheckResult {
  double max_abs_error = 0;
  double max_rel_error = 0;
  bool correct = false;  // measure::compare_output's ok: max_rel_error <= the tolerance
  std::string detail;    // measure::compare_output's line, naming the first large mismatch
};

class TesseraKernel {
 public:
  // Lowers and compiles; throws tessera::Error when the schedule does not apply
  // or the kernel does not compile.
  TesseraKernel(const ops::Workload& workload, const schedule::Trace& trace,
                const target::Target& target = target::Target::host());

  const tir::LoweredFunc& lowered() const { return lowered_; }
  void run();  // throws tessera::Error when the kernel reports failure
  // Runs once and compares the output with the workload's reference.
  CheckResult check(double tolerance = measure::kDefaultTolerance);
  double flop_count() const { return workload_.dag.flop_count(); }

 private:
  ops::Workload workload_;
  tir::LoweredFunc lowered_;
  codegen::Module module_;
  codegen::KernelFn function_;
  std::vector<runtime::NDArray> inputs_, outputs_;
  std::vector<void*> args_;
};

}  // namespace tessera::baseline
