#pragma once
// tessera autoschedule sketches OPERATOR [operator flags] [--threads N]
//                     [--target TARGET] [--random N] [--seed S]
//
// Prints the sketches the auto-scheduler's rules derive from an operator's
// compute DAG (seed 001), each with the rules that made it, its steps with
// open tile lengths shown as "?", and its annotation sites; --random N adds
// N randomly annotated schedules of each sketch as traces.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "operator_flags.h"

namespace tessera::cli {

struct AutoscheduleCommandOptions {
  OperatorFlags op;
  int threads = 0;
  std::string target;
  int random = 0;
  uint64_t seed = 0;
};

struct AutoscheduleCommands {
  CLI::App* root = nullptr;
  CLI::App* sketches = nullptr;
};

AutoscheduleCommands add_autoschedule_commands(CLI::App& app, AutoscheduleCommandOptions& o);
int run_sketches(const AutoscheduleCommandOptions& o);

}  // namespace tessera::cli
