#pragma once
// tessera records pick-best IN OUT [--target TARGET]   keep the best record of every task and target
// tessera records show FILE [--target TARGET]          one line per record
// tessera records shipped [--target TARGET]            the pre-tuned records shipped (records/shipped.h)
//
// With --target, only records that apply to it (target::same_code_target:
// kind, vector ISA and width, threads; a target without -threads= takes every
// thread count).
#include <CLI/CLI.hpp>
#include <string>

namespace tessera::cli {

struct RecordsCommandOptions {
  std::string in, out;
  std::string show;
  std::string target;  // Target::parse text; empty: every target
};

CLI::App* add_records_command(CLI::App& app, RecordsCommandOptions& o);
int run_records(CLI::App& records_cmd, const RecordsCommandOptions& o);

}  // namespace tessera::cli
