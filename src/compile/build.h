#pragma once
// Compiling a whole network: graph passes, fusion, one kernel per distinct
// fused group (the hand-written schedule of its operator), all linked into
// one shared object, and the executable graph and weights around it.
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "target/target.h"
#include "graph/fuse.h"
#include "graph/graph.h"
#include "graph/passes.h"
#include "records/apply_history_best.h"
#include "runtime/artifact.h"

namespace tessera::build {

struct KernelSummary {
  std::string name;          // the kernel's symbol
  std::string workload_key;  // its DAG's key: equal keys share one kernel
  std::string nodes;         // the graph nodes it computes, e.g. "layer1.0.conv1 + relu"
  int calls = 0;             // how many times the graph calls it
  bool tuned = false;        // scheduled by a tuning record (else hand-written)
  ir::ComputeDAG dag;        // what it computes (the auto-scheduler's task)
  std::string task_key;      // its template task's record key, when the build had records to look in
  double flop = 0;           // of a kernel without a DAG (the accelerator's): its arithmetic per call
  bool accelerator = false;  // a program for the target's accelerator (runtime/vta_device.h), not a CPU kernel
};

struct BuildOptions {
  // Tuned schedules (apply history best): each tunable kernel takes its
  // task's best record on the target; one without a record keeps the
  // hand-written schedule after a warning. Null: hand-written schedules.
  records::ApplyHistoryBest* history = nullptr;
  std::ostream* warnings = &std::cerr;
  // Whether a tunable kernel without a record says so (the seed's warning):
  // not for the shipped pre-tuned records, which cover the zoo's networks
  // only (records/shipped.h).
  bool warn_untuned = true;
  // Channel blocks of named convolutions (the graph tuner's choice, see
  // graph_choices); the others take the target's lanes.
  std::map<std::string, graph::ConvBlocks> conv_blocks;
  // Whether 3x3 convolutions may run as Winograd (graph::winograd_tile_for).
  bool winograd = true;
  // Kernels compute in the model's own layout (NCHW or NHWC) instead of
  // NCHW<lanes>c: the auto-scheduler's path (its sketches need no template).
  bool keep_layout = false;
  // Which kernels form (task extraction and the graph tuner use the
  // defaults: a build with other options has kernels they never tuned).
  graph::FuseOptions fuse;
  // False: the kernels are formed and scheduled but not compiled, and the
  // artifact has no code (what auto-scheduler task extraction reads).
  bool compile = true;
  // Mixed precision on a GPU target (--dtype float16): weights and the
  // values between kernels stored in half precision, arithmetic in fp32;
  // the network's inputs and outputs stay float32.
  bool half_storage = false;
  // Ungrouped NCHW convolutions computed as one matrix product each
  // (ops/conv2d_implicit_gemm.h), all or none; unset: the target's choice
  // (implicit_gemm_of).
  std::optional<bool> implicit_gemm;
  // A GPU target's 3x3 convolutions as Winograd in NCHW (graph::
  // choose_nchw_winograd; --convolutions winograd). Off by default: the
  // direct and product schedules are what the GPU tuning measured.
  bool gpu_winograd = false;
  // A half-storage matrix product on CUDA sm_80+ (dense, batch_matmul, a
  // convolution's implicit GEMM) without a record runs on tensor cores, as
  // the tensor-core templates' fallback configures it, where that is faster
  // than the CUDA-core tiles (autoschedule/tensor_core_fallback.h); false:
  // the hand-written CUDA-core schedule (what the benchmarks compare it
  // with).
  bool untuned_tensor_cores = true;
  // The kernels without a record with their reductions' steps pipelined
  // (schedule/pipelined_steps.h), GPU targets: to time against the default
  // on a device before the untuned build takes it.
  bool untuned_pipeline = false;
};

// Where convolutions run as matrix products for tensor cores by default:
// half storage, or fp32 with TF32 allowed (target.h), on a CUDA GPU with
// tensor cores (sm_80 and later). There every convolution of at least
// kTensorCoreImplicitGemmMinPositions output positions is one product, whose
// tiles tensor cores or CUDA cores run (autoschedule/tensor_core_fallback.h);
// one of fewer (a batch of one 7 x 7 image: ResNet's layer4, MobileNet-v2's
// last stages) stays a direct convolution: there the products lost on both
// sides, tensor cores 1.4-2.2x and CUDA cores 1.0-1.6x the fp32 direct
// kernels' time (MobileNet-v2's 7 x 7 layers at batch 1, H200, 2026-11-28:
// bench/gpu/results/h200-2026-11-28/; half direct kernels were not timed).
bool implicit_gemm_convolutions(const target::Target& target, bool half_storage);
inline constexpr int64_t kTensorCoreImplicitGemmMinPositions = 196;
// Elsewhere on CUDA, the convolutions of at least kImplicitGemmMinPositions
// output positions over images of at least kImplicitGemmMinImage: the
// product's 64 x 64 tiles on CUDA cores ran ResNet-18/50's convolutions at
// batch 16 from 56 x 56 to 14 x 14 in 0.18-0.74x the direct kernels' time,
// at 7 x 7 in 1.3-3.3x, at batch 1 in 0.58-0.88x at 56 x 56 and 1.05-2.5x
// at 28 x 28 and 14 x 14 (H200, 2026-11-28: the half networks' CUDA-core
// products against the fp32 direct kernels, bench/gpu/results/
// h200-2026-11-28/; both compute in fp32).
inline constexpr int64_t kImplicitGemmMinPositions = 3136;  // 56 x 56, or 16 images of 14 x 14
inline constexpr int64_t kImplicitGemmMinImage = 196;       // 14 x 14
// BuildOptions::implicit_gemm when set (all or none), else the above.
graph::ImplicitGemmChoice implicit_gemm_of(const BuildOptions& options, const target::Target& target);

// Half storage runs on GPU targets: throws tessera::Error in one line for a
// CPU target (an operator's --dtype float16 and a network's alike).
void require_half_storage_target(const target::Target& target);

struct BuildResult {
  runtime::Artifact artifact;
  graph::Graph optimized;  // after the passes, what the kernels compute
  std::vector<KernelSummary> kernels;
  size_t conv_blocks_chosen = 0;  // convolutions whose channel blocks BuildOptions::conv_blocks chose
};

// The largest |weight| of an int8 convolution whose byte dot products are
// exact on `target`: 64 where pairs of products saturate at 16 bits
// (Target::byte_dot "pmaddubsw": AVX2 or AVX-512BW without VNNI), else 127.
int int8_weight_limit(const target::Target& target);

// The graph passes with the target's choices (channel blocks of one vector):
// the graph build() compiles and extract_tasks reads.
graph::Graph optimize_for_target(const graph::Graph& model, const target::Target& target,
                                 const std::map<std::string, graph::ConvBlocks>& conv_blocks = {},
                                 bool winograd = true, bool keep_layout = false,
                                 const graph::ImplicitGemmChoice& implicit_gemm = false, bool gpu_winograd = false);

// Throws tessera::Error naming the node when a kernel cannot be made for it.
BuildResult build(const graph::Graph& model, const target::Target& target, const BuildOptions& options = {});
// The same from the passes' graph (optimize_for_target's, perhaps edited
// since: graph::pad_varying_dimension adds masks); `model` names the outputs.
BuildResult build_optimized(const graph::Graph& model, graph::Graph optimized, const target::Target& target,
                            const BuildOptions& options = {});

}  // namespace tessera::build
