#pragma once
// tessera records pick-best IN OUT   keep the best record of every task
// tessera records show FILE          one line per record
#include <CLI/CLI.hpp>
#include <string>

namespace tessera::cli {

struct RecordsCommandOptions {
  std::string in, out;
  std::string show;
};

CLI::App* add_records_command(CLI::App& app, RecordsCommandOptions& o);
int run_records(CLI::App& records_cmd, const RecordsCommandOptions& o);

}  // namespace tessera::cli
