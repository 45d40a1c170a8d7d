#pragma once
// How candidates are measured while tuning, shared by `tessera tune-op` and
// `tessera tune`: --number --repeat --min-repeat-ms --timeout --flush-cache
// --build-parallel --confirm-leaders --confirm-rounds.
#include <CLI/CLI.hpp>

#include "measure/builder.h"
#include "measure/runner.h"

namespace tessera::cli {

struct MeasureFlags {
  int number = 2, repeat = 3, min_repeat_ms = 20;
  double timeout = 10;                          // seconds per candidate, build and run each
  bool flush_cache = false;                     // flush the CPU caches before each measurement
  int build_parallel = 0;                       // build workers; 0: one per core
  int confirm_leaders = 5, confirm_rounds = 3;  // re-measured at the end (autotvm::TuneOptions)
};

void add_measure_flags(CLI::App* cmd, MeasureFlags& flags);
measure::LocalBuilderOptions builder_options(const MeasureFlags& flags);
// The runner's options for kernels running with `threads` threads.
measure::LocalRunnerOptions runner_options(const MeasureFlags& flags, int threads, bool check);

}  // namespace tessera::cli
