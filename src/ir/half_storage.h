#pragma once
// Mixed precision for one kernel: its inputs and outputs stored in half
// precision (DType::Float16), its arithmetic in fp32 (a loaded half is a
// float, a stored float is rounded): half the memory traffic of a
// memory-bound kernel, the accuracy of fp32 accumulation.
#include "ir/compute_dag.h"

namespace tessera::ir {

// The same computation with every float placeholder and output stored in
// Float16; intermediate stages keep fp32. Names, shapes, axes and attributes
// are kept, so schedules of the fp32 DAG apply; the workload key differs
// (it names the dtypes), so records of one never schedule the other.
ComputeDAG with_half_storage(const ComputeDAG& dag);

}  // namespace tessera::ir
