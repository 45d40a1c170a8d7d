#pragma once
// tessera op OPERATOR [operator flags] [--schedule FILE | --records FILE] [--threads N]
//            [--target TARGET] [--show] [--asm] [--check] [--compare onednn] [--repeat N]
//            [--compile-only]
//
// Builds one operator's workload, compiles it under a schedule (a JSON trace,
// the best tuning record of a log for the target, or the best hand-written
// one), and optionally prints the loops and C, checks the output against the
// reference, and times it against oneDNN (held to the target's vector ISA) in
// the same process. A target this host cannot run (e.g. AVX-512 on an AVX2
// machine) is accepted only with --compile-only, which compiles and prints
// (--show, --asm) but runs nothing.
#include <CLI/CLI.hpp>
#include <string>

#include "operator_flags.h"

namespace tessera::cli {

struct OpCommandOptions {
  OperatorFlags op;
  std::string schedule_file;  // a JSON trace
  std::string records_file;   // a tuning log: its best record for this operator
  int threads = 0;            // 0: the target's -threads=, else one per core
  std::string target;         // Target::parse text; empty: the host
  bool compile_only = false;  // compile (and print) only; allows a target this host cannot run
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
