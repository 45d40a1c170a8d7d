#pragma once
// Each kernel of a compiled network against the reference on the kernel's own
// inputs: the integer reference of a quantized network, without the noise of
// the float kernels before it. Run whole, a network's float kernels round in
// another order than the interpreter; where a value then lies within that
// noise of a rounding boundary, a quantize downstream lands one step away and
// the integer kernels after it carry the step on. Node by node, each graph
// value a kernel wrote is compared with the reference operator applied to the
// compiled values of its inputs (evaluated through the nodes fused into the
// same kernel, which no tensor holds). An integer value computed from a
// float one that no tensor holds (a quantize fused after a float
// convolution) may land one step away where the float rounds differently
// in the kernel: it is allowed that step, and counted.
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtime/graph_executor.h"

namespace tessera::driver {

struct KernelCheck {
  int integer_values = 0;  // values stored as integers (int8, uint8, int32) that a kernel wrote
  int integer_exact = 0;   // of which equal the integer reference exactly
  // of which, computed from a float value inside their kernel, are within
  // one step of it everywhere (and not exact)
  int integer_within_one = 0;
  int float_values = 0;
  double float_max_rel_error = 0;  // the largest over the float values (normwise, measure::compare_output)
  // "node 'x': 3 of 1000 elements differ, by at most 1": the first integer
  // value that differs beyond what it is allowed; empty when none does.
  std::string first_difference;
  bool exact() const { return integer_exact + integer_within_one == integer_values; }
};

// Whether a graph computes in integers anywhere (a node stores int8, uint8
// or int32): --quantize int8's, or a quantized model's imported.
bool has_integer_values(const graph::Graph& g);

// `executor` ran `optimized` (the graph its artifact was built from) on
// `inputs` and kept every tensor (runtime::GraphExecutor keep_every_tensor).
KernelCheck check_each_kernel(const graph::Graph& optimized, const runtime::GraphExecutor& executor,
                              const std::vector<runtime::NDArray>& inputs);

}  // namespace tessera::driver
