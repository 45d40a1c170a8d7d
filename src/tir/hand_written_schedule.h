#pragma once
// The hand-written schedule of a kernel on a target: what a build uses for a
// kernel without a tuned record (but for a product on tensor cores, in half
// or TF32: autoschedule/tensor_core_fallback.h), and so what the auto-scheduler
// measures first, so that a task's best record is never slower than
// building it untuned.
#include "ir/compute_dag.h"
#include "schedule/gpu_schedule.h"
#include "schedule/manual_schedule.h"
#include "target/target.h"
#include "tir/verify_gpu.h"

namespace tessera::tir {

inline schedule::Trace hand_written_schedule(const ir::ComputeDAG& dag, const target::Target& target) {
  if (target.is_gpu()) return schedule::best_gpu_schedule(dag, gpu_block_limits(target));
  return schedule::best_manual_schedule(dag, target.vector_unit());
}

}  // namespace tessera::tir
