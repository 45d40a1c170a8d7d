#pragma once
// The buffers a kernel of a ComputeDAG is called with, and the comparison of an
// output with its reference. Shared by the runner, the CLI and the tests, so
// that all of them feed kernels the same inputs and judge them the same way.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/compute_dag.h"
#include "measure/timer.h"
#include "runtime/ndarray.h"

namespace tessera::measure {

// Seed of the random values of placeholder `index` (dag.placeholders() order).
// Fixed, so every process and every run sees the same inputs.
uint64_t input_seed(size_t index);

// One array per placeholder, uniform in [-1, 1) from input_seed(i).
std::vector<runtime::NDArray> make_inputs(const ir::ComputeDAG& dag);
// One zeroed array per output, in dag.outputs() order.
std::vector<runtime::NDArray> make_outputs(const ir::ComputeDAG& dag);

// The argument array of codegen::KernelFn: inputs, then outputs (ComputeDAG::arguments() order).
std::vector<void*> kernel_arg_pointers(std::vector<runtime::NDArray>& inputs,
                                       std::vector<runtime::NDArray>& outputs);
// The same buffers as (pointer, bytes) ranges, for time_function's cache flush.
FlushList flush_list_of(const std::vector<runtime::NDArray>& inputs,
                        const std::vector<runtime::NDArray>& outputs);

struct OutputComparison {
  bool ok = true;              // every element has |got - want| <= atol + rtol * |want|
  double max_abs_error = 0;
  double max_rel_error = 0;    // |got - want| / |want| (infinite where want is 0 and got is not)
  int64_t first_bad_index = -1;  // flat index of the first element out of tolerance
  float first_bad_got = 0, first_bad_want = 0;
  // One line for error messages: "max abs error 0.5, max rel error 1, first mismatch at 3: got 2 want 1"
  std::string describe() const;
};

// A NaN in `got` never passes. Shapes must match (throws tessera::Error otherwise).
OutputComparison compare_output(const runtime::NDArray& got, const runtime::NDArray& want,
                                double rtol, double atol);
OutputComparison compare_output(const float* got, const float* want, int64_t size, double rtol,
                                double atol);

}  // namespace tessera::measure
