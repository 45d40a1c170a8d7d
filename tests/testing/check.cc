#include "testing/check.h"

#include <algorithm>
#include <cmath>

#include "codegen/llvm_codegen.h"
#include "codegen/module.h"
#include "measure/kernel_args.h"
#include "measure/storage_arguments.h"
#include "runtime/thread_pool.h"
#include "tir/lower.h"
#include "tir/printer.h"

namespace tessera::testing {

CheckResult check_schedule(const ops::Workload& w, const schedule::Trace& trace, int threads) {
  tir::LoweredFunc f = tir::lower(w.dag, trace, "kernel");
  codegen::Module m = codegen::Module::load_object(codegen::compile_to_object(f, target::Target::host()));
  auto inputs = measure::make_inputs(w.dag);
  auto outputs = measure::make_outputs(w.dag);
  measure::StorageArguments args(w.dag, inputs, outputs);
  runtime::set_num_threads(threads);
  m.function("kernel")(args.pointers());
  runtime::set_num_threads(0);
  args.outputs_to_arrays();

  std::vector<const float*> in_ptrs;
  for (const auto& a : inputs) in_ptrs.push_back(a.data());
  runtime::NDArray want(outputs[0].shape());
  w.reference(in_ptrs, want.data());

  CheckResult r;
  r.lowered = tir::to_string(f);
  // The one definition of correct: tests assert max_rel_error <= 1e-4, which
  // is compare_output's ok at its default tolerance.
  const measure::OutputComparison c = measure::compare_output(outputs[0], want);
  r.max_abs_error = c.max_abs_error;
  r.max_rel_error = c.max_rel_error;
  return r;
}

double max_relative_error(const ops::Workload& w, const schedule::Trace& trace) {
  return check_schedule(w, trace).max_rel_error;
}

}  // namespace tessera::testing
