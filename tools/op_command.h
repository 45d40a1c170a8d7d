#pragma once
// tessera op OPERATOR [operator flags] [--schedule FILE | --records FILE] [--threads N]
//            [--show] [--asm] [--check] [--compare onednn] [--repeat N]
//
// Builds one operator's workload, compiles it under a schedule (a JSON trace,
// the best tuning record of a log, or the best hand-written one), and
// optionally prints the loops and C, checks the output against the reference,
// and times it against oneDNN in the same process.
#include <CLI/CLI.hpp>
#include <string>

#include "operator_flags.h"

namespace tessera::cli {

struct OpCommandOptions {
  OperatorFlags op;
  std::string schedule_file;  // a JSON trace
  std::string records_file;   // a tuning log: its best record for this operator
  int threads = 0;            // 0: one per core
  bool show = false;
  bool assembly = false;      // print the generated assembly
  bool check = false;
  std::string compare;        // "" or "onednn"
  int repeat = 5;             // measurements of each side
  int min_repeat_ms = 200;    // each measurement lasts at least this long
};

CLI::App* add_op_command(CLI::App& app, OpCommandOptions& o);
int run_op(const OpCommandOptions& o);

}  // namespace tessera::cli
