#include "tessera_kernel.h"

#include <algorithm>
#include <cmath>

#include "codegen/llvm_codegen.h"
#include "tessera/error.h"
#include "tir/lower.h"

namespace tessera::baseline {

namespace {
constexpr const char* kFunctionName = "tessera_kernel";
}

TesseraKernel::TesseraKernel(const ops::Workload& workload, const schedule::Trace& trace,
                             const target::Target& target)
    : workload_(workload),
      lowered_(tir::lower(workload.dag, trace, kFunctionName)),
      module_(codegen::Module::load_object(codegen::compile_to_object(lowered_, target))),
      function_(module_.function(kFunctionName)),
      inputs_(measure::make_inputs(workload.dag)),
      outputs_(measure::make_outputs(workload.dag)),
      args_(measure::kernel_arg_pointers(inputs_, outputs_)) {}

void TesseraKernel::run() {
  if (function_(args_.data()) != 0)
    throw Error(workload_.op + ": the Tessera kernel reported failure");
}

CheckResult TesseraKernel::check(double tolerance) {
  run();
  const runtime::NDArray& got = outputs_.front();
  runtime::NDArray want(got.shape());
  std::vector<const float*> inputs;
  for (const auto& a : inputs_) inputs.push_back(a.data());
  workload_.reference(inputs, want.data());

  const measure::OutputComparison c = measure::compare_output(got, want, tolerance);
  CheckResult r;
  r.max_abs_error = c.max_abs_error;
  r.max_rel_error = c.max_rel_error;
  r.correct = c.ok;
  r.detail = c.describe();
  return r;
}

}  // namespace tessera::baseline
