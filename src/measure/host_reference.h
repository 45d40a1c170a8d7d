#pragma once
// The output a DAG should give, computed on this host: its default schedule
// (schedule/default_schedule.h) compiled by LLVM, in fp32 throughout (a
// half-storage DAG's inputs arrive rounded to halves already, and its
// output is compared within the half tolerance). What GPU candidates of a
// network's tasks, which have no operator reference of their own, are
// checked against: a new code path (tensor cores) must not win by being
// wrong.
#include "ir/compute_dag.h"
#include "measure/runner.h"

namespace tessera::measure {

// Compiles once; the function runs the kernel (and allocates the DAG's
// other outputs) per call. Throws tessera::Error when the DAG cannot be
// compiled for this host.
ReferenceFn host_reference(const ir::ComputeDAG& dag);

}  // namespace tessera::measure
