#pragma once
// A compiled model in one file: the executable graph, its weights and its
// kernels (a shared object), plus the target they were compiled for.
//
// Layout (little-endian): the 8 bytes "TESSERA\0", a u32 format version (2), a
// u32 section count, then per section a u32 name length, the name, a u64
// size, a u32 CRC-32 of the bytes, and the bytes. Sections: "target" (text),
// "instruction_sets" (those the kernels use, space-separated: "avx2 fma"),
// "graph" (ExecutableGraph as JSON), "params" (the constants' fp32 values in
// graph.constants order, back to back), "kernels" (the shared object),
// "kernel_info" (JSON: what each kernel computes, for reports; optional); a
// model compiled over a range of one dimension adds "varying" (JSON: the
// dimension, its buckets, which inputs and outputs vary along which axes)
// and per smaller bucket i "bucket.i.graph", "bucket.i.kernels",
// "bucket.i.shared" (JSON: per constant, the index of the equal param of
// the largest bucket, or -1) and "bucket.i.params" (the other constants).
// A model compiled for a GPU target adds "gpu" (runtime/gpu_code.h: its
// source and launches as JSON), "gpu.cubin" and "gpu.ptx" (cuda's binaries),
// and each smaller bucket "bucket.i.gpu", "bucket.i.gpu.cubin", "bucket.i.gpu.ptx".
// A model compiled for "vta" adds "vta" (runtime/vta_device.h: the
// accelerator's configuration and one program per packed kernel, as JSON).
// Unknown sections are skipped, so a later writer may add some without
// breaking older readers. A damaged byte anywhere fails its section's CRC:
// a flipped bit is an error naming the file and section, never a crash or a
// wrong answer.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/executable_graph.h"
#include "runtime/gpu_code.h"
#include "runtime/ndarray.h"
#include "runtime/vta_device.h"

namespace tessera::runtime {

// A model compiled for a dimension that varies at run time
// (graph/varying_dimension.h): one graph and kernels per bucket size, an
// input padded to the smallest bucket that holds it.
struct VaryingShapes {
  using Axes = std::map<int, int64_t>;  // axis -> positions per unit of the dimension
  std::string name;                     // "sequence"
  int64_t min = 1, max = 1;
  std::vector<int64_t> buckets;           // increasing; the artifact's own graph is the last (max)
  std::map<std::string, Axes> inputs;     // the inputs that vary, by name
  std::vector<Axes> outputs;              // per output; empty: fixed
  // Whether each bucket's graph takes the mask of padded keys (an input
  // named kPaddingMaskInput, float32[bucket]: 0 valid, -1e30 padded).
  bool masked = false;
  // Why padding would change the model's result (a convolution over a
  // varying image axis), when it would: then only the buckets' own sizes run.
  std::string exact_only;
};
inline constexpr const char* kPaddingMaskInput = "tessera.padding_mask";
inline constexpr float kPaddedKey = -1e30f;

// One of the smaller buckets: its graph and kernels; its constants are the
// artifact's own params where equal (`shared`: per constant, the index of
// that param, or -1 for the next of `own`), which are stored once.
struct ArtifactBucket {
  int64_t size = 0;
  ExecutableGraph graph;
  std::string shared_object;
  std::vector<int> shared;
  std::vector<NDArray> own;
  std::optional<GpuCode> gpu;  // a GPU target's kernels, as Artifact::gpu
};

// What the compiler knew of a kernel, for reading a model's profile
// (`tessera report`): section "kernel_info" (JSON), absent from artifacts
// written before it and never needed to run.
struct KernelInfo {
  std::string name;          // the kernel's symbol
  std::string nodes;         // the graph nodes it computes, e.g. "layer1.0.conv1 + relu"
  double flop = 0;           // arithmetic per call (ir::ComputeDAG::flop_count)
  bool tuned = false;        // scheduled by a tuning record, else by the hand-written schedule
  std::string workload_key;  // its DAG's key: the auto-scheduler's task
  std::string task_key;      // the template task's key its records are filed under; empty: none
};

struct Artifact {
  std::string target;  // e.g. "llvm -mcpu=znver3 -threads=2"
  ExecutableGraph graph;
  std::vector<NDArray> params;  // one per graph.constants entry, of its shape
  std::string shared_object;    // the kernels' bytes
  // What the kernels need of the CPU (codegen's names: "avx2", "avx512f"):
  // the executor refuses to run them on a host that lacks one.
  std::vector<std::string> instruction_sets;
  // Set for a model compiled over a range of one dimension: then the fields
  // above are the largest bucket's, `smaller` the others' in increasing size.
  std::optional<VaryingShapes> varying;
  std::vector<ArtifactBucket> smaller;
  // A GPU target's kernels (then shared_object is empty): sections "gpu",
  // "gpu.cubin", "gpu.ptx".
  std::optional<GpuCode> gpu;
  // The largest bucket's kernels, in the order they were made.
  std::vector<KernelInfo> kernel_info;
  // A "vta" target's accelerator kernels (the CPU's are in shared_object):
  // section "vta". Their calls in the graph name them like any kernel.
  std::optional<VtaCode> vta;
};

// A copy that owns its own weights (NDArray memory is not shared): what a
// caller keeps to save while an executor runs the original.
Artifact copy_artifact(const Artifact& artifact);

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
