#pragma once
// tessera tune-op OPERATOR [operator flags] [--search templates|auto] --tuner NAME --trials N
//                 [--early-stopping N] [--log FILE] [--threads N] [--target TARGET]
//                 [measure flags: --number --repeat --min-repeat-ms --timeout
//                  --check --flush-cache --build-parallel]
//
// Tunes one operator with an AutoTVM template (--search templates, the
// default) or with the template-free auto-scheduler (--search auto: the
// operator's own DAG in its own layout, sketches and evolutionary search):
// prints the progress line after
// every batch and appends every measurement to the log. Rerun with the same
// log to resume: configs already measured (on a matching target) are not
// measured again. Each record's target carries the thread count, e.g.
// "llvm -mcpu=znver3 -threads=2". The target must be one this host can run.
#include <CLI/CLI.hpp>
#include <string>

#include "measure_flags.h"
#include "operator_flags.h"

namespace tessera::cli {

struct TuneCommandOptions {
  OperatorFlags op;
  std::string search = "templates";  // or "auto"
  std::string tuner = "xgb";
  int trials = 200;
  int early_stopping = 0;  // 0: never
  std::string log;         // empty: no log
  std::string history;     // earlier logs to warm-start the model from (transfer learning)
  int threads = 0;         // threads the kernels run with; 0: the target's -threads=, else one per core
  std::string target;      // Target::parse text; empty: the host
  bool check = true;       // compare every candidate with the reference
  MeasureFlags measure;
  uint64_t seed = 0;
};

CLI::App* add_tune_command(CLI::App& app, TuneCommandOptions& o);
int run_tune(const TuneCommandOptions& o);

}  // namespace tessera::cli
