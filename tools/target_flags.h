#pragma once
// --target "llvm -mcpu=NAME [-mattr=...] [-threads=N]", shared by `tessera op`,
// `tessera tune-op` and `tessera records`: what code is generated (or records
// were tuned) for. Default: the host.
#include <CLI/CLI.hpp>
#include <string>

#include "target/target.h"

namespace tessera::cli {

void add_target_flag(CLI::App* cmd, std::string& text, const std::string& help);
// The target --target names, the host when `text` is empty; the error names the flag.
target::Target parse_target_flag(const std::string& text);
// As parse_target_flag, with the thread count the kernels run with set:
// --threads when given, else the target's -threads=, else one per core. The
// two given and different is an error naming both.
target::Target resolve_target(const std::string& text, int threads);

}  // namespace tessera::cli
