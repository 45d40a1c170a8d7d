#pragma once
// tessera op ... --target cuda|opencl: one operator under a GPU schedule (a
// --schedule trace, a tuning log's best record, else the best hand-written
// GPU schedule), its loops and
// GPU source printed with --show; for cuda compiled by NVRTC for the target's
// arch, each kernel's registers, spills and shared memory shown; then (unless
// --compile-only) run on the target's device (the CUDA driver, or the OpenCL
// device), checked against the reference with --check and timed by the
// device's clock, each measurement at least --min-repeat-ms long.
#include "op_command.h"
#include "ops/workload.h"
#include "schedule/trace.h"
#include "target/target.h"

namespace tessera::cli {

// `w` under `trace` (a --schedule file's, a record's, or the hand-written GPU schedule).
int run_gpu_op(const OpCommandOptions& o, const target::Target& target, const ops::Workload& w,
               const schedule::Trace& trace);

}  // namespace tessera::cli
