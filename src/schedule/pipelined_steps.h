#pragma once
// A GPU schedule with each of its reductions' steps pipelined: every loop
// that a shared-memory fetch is computed at (a cache_read with scope
// "shared", then compute_at) annotated Pipeline, once, so that its staged
// fetches load the next step while this one computes
// (tir/pipeline_fetches.h). What build::BuildOptions::untuned_pipeline
// applies to the kernels a build runs untuned: the same kernels both ways,
// to be timed against each other on a GPU (bench/gpu/untuned_check.sh).
#include "schedule/trace.h"

namespace tessera::schedule {

Trace pipelined_steps(const Trace& trace);

}  // namespace tessera::schedule
