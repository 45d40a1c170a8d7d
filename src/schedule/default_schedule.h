#pragma once
// A schedule that works for every DAG: elementwise intermediates are inlined,
// the outer spatial loops of each remaining stage are fused and run in
// parallel, and a non-reduction stage vectorises its innermost axis when it
// divides evenly into 8 lanes.
#include "schedule/trace.h"

namespace tessera::schedule {

Trace default_schedule(const ir::ComputeDAG& dag);

}  // namespace tessera::schedule
