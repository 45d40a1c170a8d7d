#pragma once
// Compiling a network for a target, with tuning records applied: the one
// flow behind `tessera compile`, `tessera run` and `tessera bench` on a
// model, tessera.compile() in Python, tessera::compile() in C++ and the jit.
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "target/target.h"
#include "compile/build.h"
#include "graph/fuse.h"
#include "graph/graph.h"
#include "graph/quantize_network.h"
#include "graph/varying_dimension.h"
#include "records/record.h"
#include "records/shipped.h"

namespace tessera::driver {

// The CLI's compile flags, one to one.
struct CompileOptions {
  // Logs whose best records schedule the kernels (apply history best); a
  // graph tuner's file chooses convolutions' channel blocks too. A kernel
  // without a record keeps the hand-written schedule (one warning each).
  std::vector<std::string> records;
  // Records already read (a tuning's own log, whose damaged lines its tuner
  // reported): applied with those of `records`, without reading a file again.
  std::vector<records::Record> loaded_records;
  bool winograd = true;      // --no-winograd: false
  bool keep_layout = false;  // --keep-layout: kernels in the model's own layout (the auto-scheduler's)
  // --fuse-depthwise-rows: fuse a depthwise 3x3 with the 1x1 projection after
  // it when its output has at least this many rows (0: never).
  int64_t fuse_depthwise_rows = graph::FuseOptions{}.depthwise_projection_min_rows;
  // Damaged record lines and kernels without records are reported here.
  std::ostream* warnings = &std::cerr;
  // Given no records: the pre-tuned records shipped for the target
  // (records/shipped.h), said once on `warnings`. --no-shipped-records: false.
  bool shipped_records = true;
  std::string shipped_dir = records::shipped_records_dir();
  // --dtype: "float32", or "float16" on a GPU target (build::BuildOptions::half_storage).
  std::string dtype = "float32";
  // --convolutions: "auto" (as one matrix product each where tensor cores
  // run them, half storage on CUDA sm_80+, and the large ones elsewhere on
  // CUDA: build::implicit_gemm_of; Winograd for 3x3 on CPUs), "direct",
  // "implicit-gemm" or "winograd" (apply_convolutions).
  std::string convolutions = "auto";
  // build::BuildOptions::untuned_tensor_cores: half products without a
  // record on tensor cores where that pays (autoschedule/tensor_core_fallback.h).
  bool untuned_tensor_cores = true;
  // build::BuildOptions::untuned_pipeline.
  bool untuned_pipeline = false;
  // --quantize int8: the convolutions computed in int8 (graph::
  // quantize_network; CPU targets), calibrated on `calibrate` (--calibrate:
  // a number of random samples or a .npy file, driver/calibration_samples.h)
  // by `quantization` (--calibration, --percentile, --skip-layers,
  // --global-scale). Empty: float32.
  std::string quantize;
  std::string calibrate = "8";
  graph::QuantizeOptions quantization;
};

// build::BuildOptions::half_storage for a --dtype; throws tessera::Error
// naming the dtype when it is neither float32 nor float16.
bool half_storage_of(const std::string& dtype);
// A --convolutions into the build options: "auto" leaves the defaults;
// "direct" turns implicit GEMM and Winograd off; "implicit-gemm" (GPU
// targets only) computes them as matrix products; "winograd" runs the 3x3
// ones as Winograd (on a GPU: BuildOptions::gpu_winograd). Throws
// tessera::Error naming the value when it is none of the four, or when it
// asks for matrix products on a CPU target (the CPU schedules convolve
// directly or by Winograd).
void apply_convolutions(const std::string& convolutions, const target::Target& target, build::BuildOptions& b);

// --quantize int8's graph (`quantize` must be "int8"): the float model
// optimized in NCHW, its convolutions quantized by graph::quantize_network
// (weights within what the target's byte dot product computes exactly),
// calibrated on `calibrate` (driver/calibration_samples.h) unless a global
// scale is given; before the passes for the target, which block the int8
// convolutions. Compile and tune (TuneOptions::quantize) both start here, so
// a tuning log's int8 tasks are the compiled network's. Says on `warnings`
// how many convolutions got int8; throws tessera::Error when none did or the
// target is a GPU.
graph::Graph quantize_model(const graph::Graph& model, const target::Target& target, const std::string& quantize,
                            const std::string& calibrate, const graph::QuantizeOptions& options,
                            std::ostream& warnings);

// --target vta (seed 003): the network quantized with power-of-two scales
// (QuantizeOptions::power_of_two; the global scale 8 unless one is given;
// --skip-layers as given, the first convolution by default), packed for the
// accelerator's GEMM core between its first max pooling and its global
// average pooling (graph::graph_pack), through the host CPU's passes for
// the rest. Says on `warnings` what runs on VTA and what stays on the CPU.
graph::Graph vta_graph(const graph::Graph& model, const target::Target& target, const CompileOptions& options,
                       const build::BuildOptions& build_options);

// Throws tessera::Error naming the node when a kernel cannot be made for it,
// or naming the log when one cannot be read.
build::BuildResult compile(const graph::Graph& model, const target::Target& target,
                           const CompileOptions& options = {});

// A model over a range of one dimension (graph/varying_dimension.h):
// `load(size)` gives the model at one size of it; each bucket is optimized,
// proven exact under padding (masks added), compiled, and all go into one
// artifact (Artifact::varying) whose weights are stored once.
struct VaryingBuildResult {
  runtime::Artifact artifact;
  std::vector<build::BuildResult> buckets;  // per bucket, in increasing size (their artifacts moved out)
};
VaryingBuildResult compile_varying(const std::function<graph::Graph(int64_t size)>& load,
                                   const graph::VaryingDimension& dimension, const target::Target& target,
                                   const CompileOptions& options = {});

}  // namespace tessera::driver
