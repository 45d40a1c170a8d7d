#pragma once
// Tessera's public C++ API: load a network, compile it into an artifact, run
// it. The command line (tools/) and examples/ use these names.
//
//   tessera::Graph model = tessera::load_model("resnet-18");
//   tessera::Artifact artifact = tessera::compile(model);           // this host
//   tessera::write_artifact(artifact, "resnet-18.tsr");             // deploy ...
//   tessera::GraphExecutor ex = tessera::GraphExecutor::load("resnet-18.tsr");  // ... and run
//   ex.set_input("data", image);
//   ex.run();
//   tessera::NDArray logits = ex.get_output(0);
//
// Running an artifact needs only the runtime library (tessera_runtime): see
// examples/run_artifact.cc.
#include <string>

#include "build/build.h"
#include "codegen/target.h"
#include "graph/model_source.h"
#include "runtime/graph_executor.h"
#include "tessera/error.h"

namespace tessera {

using graph::Graph;
using graph::ModelOptions;
using runtime::Artifact;
using runtime::GraphExecutor;
using runtime::NDArray;
using runtime::read_artifact;
using runtime::write_artifact;

// A zoo name ("resnet-18", "mobilenet-v2", ...) or an .onnx file.
inline Graph load_model(const std::string& model, const ModelOptions& options = {}) {
  return graph::load_model(model, options);
}

// `target`: "" for this host, or e.g. "llvm -mcpu=znver3 -threads=2".
inline Artifact compile(const Graph& model, const std::string& target = "") {
  return build::build(model, target.empty() ? codegen::Target::host() : codegen::Target::parse(target)).artifact;
}

}  // namespace tessera
