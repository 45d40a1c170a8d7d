#pragma once
// How candidates are measured while tuning, shared by `tessera tune-op` and
// `tessera tune`: --number --repeat --min-repeat-ms --timeout --flush-cache
// --build-parallel --confirm-leaders --confirm-rounds, and where: --runner
// local (this machine) or rpc (--key --tracker: the devices of a key behind
// an RPC tracker).
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "autotvm/tuner.h"
#include "measure/builder.h"
#include "measure/runner.h"

namespace tessera::cli {

struct MeasureFlags {
  int number = autotvm::kSearchNumber, repeat = autotvm::kSearchRepeat, min_repeat_ms = autotvm::kSearchMinRepeatMs;
  double timeout = 10;                          // seconds per candidate, build and run each
  bool flush_cache = false;                     // flush the CPU caches before each measurement
  int build_parallel = 0;                       // build workers; 0: one per core
  int confirm_leaders = 5, confirm_rounds = 3;  // re-measured at the end (autotvm::TuneOptions)
  std::string runner = "local";                 // local or rpc
  std::string device_key;                       // --runner rpc: the key of the devices
  std::string tracker = "127.0.0.1:9190";       // --runner rpc: HOST:PORT
  int priority = 0;                             // --runner rpc: of this tuner's requests
  std::string key_file;                         // --runner rpc: the fleet's key file
  double device_wait = 60;                      // --runner rpc: seconds with no live device before giving up
  bool remote() const { return runner == "rpc"; }
};

void add_measure_flags(CLI::App* cmd, MeasureFlags& flags);
measure::LocalBuilderOptions builder_options(const MeasureFlags& flags);
// The runner's options for kernels running with `threads` threads.
measure::LocalRunnerOptions runner_options(const MeasureFlags& flags, int threads, bool check);
// A LocalRunner, or an RpcRunner with --runner rpc, measuring under `options`.
std::unique_ptr<measure::Runner> make_runner(const MeasureFlags& flags, const measure::LocalRunnerOptions& options,
                                             measure::ReferenceFn reference = nullptr);

}  // namespace tessera::cli
