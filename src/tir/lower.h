#pragma once
// Lowering: a schedule's State (a DAG with a trace replayed on it) -> a kernel
// in loop-nest IR. The pipeline is one list of named passes in lower.cc, each
// followed by the verifier (tir/verify.h); with TESSERA_LOG=lower each pass's
// result is printed to stderr.
#include <string>

#include "schedule/trace.h"
#include "tir/stmt.h"

namespace tessera::tir {

LoweredFunc lower(const schedule::State& state, const std::string& name = "kernel");

// The rest of the pipeline, which code generators run on a copy: loops
// partitioned (tir/partition_loops.h), unrolled loops expanded (so padding
// checks fold to constants and taps that only add zero disappear), sums over
// padding skipped (tir/skip_padding.h). Kept apart from lower() so that
// printing and cost-model features see the loops as scheduled.
LoweredFunc prepare_for_codegen(LoweredFunc f);
// The same for a GPU: unrolled loops expanded, simplified. Not partitioned:
// a bound loop split in two would launch two grids' worth of indices.
LoweredFunc prepare_for_gpu_codegen(LoweredFunc f);
LoweredFunc lower(const ir::ComputeDAG& dag, const schedule::Trace& trace,
                  const std::string& name = "kernel");

}  // namespace tessera::tir
