#pragma once
// Mixed precision for one kernel: its inputs and outputs stored in half
// precision (DType::Float16), its arithmetic in fp32 (a loaded half is a
// float, a stored float is rounded): half the memory traffic of a
// memory-bound kernel, the accuracy of fp32 accumulation.
#include <vector>

#include "ir/compute_dag.h"

namespace tessera::ir {

// The same computation with every float placeholder and output stored in
// Float16; intermediate stages keep fp32. Names, shapes, axes and attributes
// are kept, so schedules of the fp32 DAG apply; the workload key differs
// (it names the dtypes), so records of one never schedule the other.
// `keep_float32[i]` keeps placeholder i (of dag.placeholders()) in fp32, and
// `outputs_float32` the outputs: a network in half keeps its inputs (token
// ids among them: exact in fp32 up to 2^24, in half up to 2048 only) and
// its outputs in fp32.
ComputeDAG with_half_storage(const ComputeDAG& dag, const std::vector<bool>& keep_float32 = {},
                             bool outputs_float32 = false);

// The inverse: every Float16 tensor stored in fp32 (what a host reference
// of a half-storage kernel computes, its inputs rounded to halves already).
ComputeDAG with_float32_storage(const ComputeDAG& dag);

}  // namespace tessera::ir
