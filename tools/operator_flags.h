#pragma once
// The flags that name an operator instance, shared by `tessera op` and
// `tessera tune-op`: each flag is one field (shapes stay text until parsed, so
// an error can name the flag and the text).
#include <CLI/CLI.hpp>
#include <string>

#include "ops/registry.h"
#include "target/target.h"

namespace tessera::cli {

struct OperatorFlags {
  std::string op;
  std::string input, weight, padding;  // "1x64x56x56"; padding "1x1" or "1x1x2x2"
  ops::OpArgs args;                    // every other operator argument
};

void add_operator_flags(CLI::App* cmd, OperatorFlags& f);
// The arguments with the shapes parsed; throws tessera::Error naming a bad flag.
ops::OpArgs resolve(const OperatorFlags& f);
// Throws for --dtype float16 on a CPU target: half storage is built for GPUs
// (the CPU runners pass fp32 arrays).
void require_dtype_runs_on(const ops::OpArgs& args, const target::Target& target);
// "1x64x56x56" -> {1, 64, 56, 56}; the error names the flag and the value.
ops::Shape parse_shape(const std::string& flag, const std::string& text);
// 0 -> one per core; negative -> error naming --threads.
int resolve_threads(int threads);

}  // namespace tessera::cli
