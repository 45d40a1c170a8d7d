#pragma once
// A compiled model in one file: the executable graph, its weights and its
// kernels (a shared object), plus the target they were compiled for.
//
// Layout (little-endian): the 8 bytes "TESSERA\0", a u32 format version (2), a
// u32 section count, then per section a u32 name length, the name, a u64
// size, a u32 CRC-32 of the bytes, and the bytes. Sections: "target" (text),
// "instruction_sets" (those the kernels use, space-separated: "avx2 fma"),
// "graph" (ExecutableGraph as JSON), "params" (the constants' fp32 values in
// graph.constants order, back to back), "kernels" (the shared object).
// Unknown sections are skipped, so a later writer may add some without
// breaking older readers. A damaged byte anywhere fails its section's CRC:
// a flipped bit is an error naming the file and section, never a crash or a
// wrong answer.
#include <string>
#include <vector>

#include "runtime/executable_graph.h"
#include "runtime/ndarray.h"

namespace tessera::runtime {

struct Artifact {
  std::string target;  // e.g. "llvm -mcpu=znver3 -threads=2"
  ExecutableGraph graph;
  std::vector<NDArray> params;  // one per graph.constants entry, of its shape
  std::string shared_object;    // the kernels' bytes
  // What the kernels need of the CPU (codegen's names: "avx2", "avx512f"):
  // the executor refuses to run them on a host that lacks one.
  std::vector<std::string> instruction_sets;
};

// Writes to a temporary beside `path` and renames it into place, so a crash
// never leaves half an artifact under the final name.
void write_artifact(const Artifact& artifact, const std::string& path);

// Throws tessera::Error naming `path` and what is wrong: not an artifact, a
// newer format, a truncated, damaged (CRC) or missing section, params that do
// not match the graph's constants. The file's size is checked against what
// its header claims before its sections are read.
Artifact read_artifact(const std::string& path);

// True when `path` is a file that starts with the artifact's magic, whatever
// its name (false when it cannot be read).
bool is_artifact_file(const std::string& path);

}  // namespace tessera::runtime
