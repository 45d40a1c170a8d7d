#pragma once
// The buffers a kernel of a ComputeDAG is called with, and the comparison of an
// output with its reference. Shared by the runner, the CLI and the tests, so
// that all of them feed kernels the same inputs and judge them the same way.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/compute_dag.h"
#include "measure/timer.h"
#include "runtime/executable_graph.h"
#include "runtime/ndarray.h"

namespace tessera::measure {

// Seed of the random values of placeholder `index` (dag.placeholders() order).
// Fixed, so every process and every run sees the same inputs.
uint64_t input_seed(size_t index);

// The shapes of `tensors` (a DAG's placeholders or outputs), in order.
std::vector<std::vector<int64_t>> tensor_shapes(const std::vector<ir::Tensor>& tensors);
// One array per placeholder, uniform in [-1, 1) from input_seed(i); a
// placeholder stored as an integer (Int8, UInt8, Int32) gets whole numbers
// across its range (Int32: +-2^15), which measure/storage_arguments.h stores.
std::vector<runtime::NDArray> make_inputs(const ir::ComputeDAG& dag);
// The same from the placeholders' shapes alone (what an RPC server has).
std::vector<runtime::NDArray> make_inputs(const std::vector<std::vector<int64_t>>& shapes);
// One zeroed array per output, in dag.outputs() order.
std::vector<runtime::NDArray> make_outputs(const ir::ComputeDAG& dag);

// The argument array of codegen::KernelFn: inputs, then outputs (ComputeDAG::arguments() order).
std::vector<void*> kernel_arg_pointers(std::vector<runtime::NDArray>& inputs,
                                       std::vector<runtime::NDArray>& outputs);
// The buffers time_function's cache flush evicts, as (pointer, bytes) ranges:
// every argument but the first input. Inside a network that input is the
// previous kernel's output, still in cache, while the weights (read once per
// inference) and the output's storage come from memory; evicting all but it
// makes a kernel's measured time its time inside the network (seed 000's
// enable_cpu_cache_flush).
FlushList flush_list_of(const std::vector<runtime::NDArray>& inputs,
                        const std::vector<runtime::NDArray>& outputs);

// The one definition of a correct output, used by the runner (a wrong answer
// while tuning), `tessera op --check`, the benchmarks and the tests: every
// element within `tolerance` of the reference, relative to the reference's
// largest magnitude:
//   |got[i] - want[i]| <= tolerance * max_j |want[j]|   for every i.
// Normwise, because a convolution's outputs are sums of many signed terms:
// those that land near 0 carry the rounding error of the large terms, and
// must not be held to more digits than the largest output. NaN never passes.
inline constexpr double kDefaultTolerance = 1e-4;
// A half-stored output differs from the fp32 reference by its own rounding
// (2^-11 relative) and the order of the additions.
inline constexpr double kHalfStorageTolerance = 2e-3;
// A kernel whose fp32 products run on tensor cores in TF32 (a "-tf32"
// target) rounds every operand to a 10-bit mantissa, as half storage does:
// its outputs are held to kHalfStorageTolerance; on other targets, none.
inline double tf32_tolerance(bool tf32) { return tf32 ? kHalfStorageTolerance : 0; }
// A whole network in half storage (--dtype float16) against the fp32
// interpreter: every weight and intermediate value rounded, layer after layer.
inline constexpr double kHalfNetworkTolerance = 5e-3;  // the zoo and tiny BERT/GPT-2 on PoCL: at most 1.0e-3
// The bar for a compiled network's outputs against the fp32 interpreter.
inline double network_tolerance(const runtime::ExecutableGraph& graph) {
  return graph.has_half_tensors() ? kHalfNetworkTolerance : kDefaultTolerance;
}

struct OutputComparison {
  bool ok = true;                // max_rel_error <= tolerance
  double max_abs_error = 0;      // max |got - want| (infinite for a NaN)
  double max_rel_error = 0;      // max_abs_error / max |want| (infinite where want is all 0 and got is not)
  int64_t first_bad_index = -1;  // flat index of the first element out of tolerance
  float first_bad_got = 0, first_bad_want = 0;
  // One line for error messages: "max abs error 0.5, max rel error 1, first mismatch at 3: got 2 want 1"
  std::string describe() const;
};

// Shapes must match (throws tessera::Error otherwise).
OutputComparison compare_output(const runtime::NDArray& got, const runtime::NDArray& want,
                                double tolerance = kDefaultTolerance);
OutputComparison compare_output(const float* got, const float* want, int64_t size,
                                double tolerance = kDefaultTolerance);

}  // namespace tessera::measure
