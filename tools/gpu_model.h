#pragma once
// tessera compile|run|bench for a model compiled for a GPU target (cuda,
// opencl): the artifact's kernels run by runtime::GpuGraphExecutor on the
// device (the CUDA driver, or the OpenCL device); bench times by the
// device's clock and prints the seed's "Mean inference time (std dev)".
#include "model_command.h"
#include "runtime/artifact.h"

namespace tessera::cli {

// compile --check: the written artifact's outputs against the interpreter
// on seeded inputs; true when every output is correct.
bool check_gpu_artifact(const std::string& path, const graph::Graph& model);
int run_gpu_model(const ModelCommandOptions& o, runtime::Artifact artifact);
int bench_gpu_model(const ModelCommandOptions& o, runtime::Artifact artifact);

}  // namespace tessera::cli
