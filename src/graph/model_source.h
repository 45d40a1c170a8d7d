#pragma once
// Where a network comes from: a model-zoo name ("resnet-18") or an ONNX file
// (a path ending in .onnx).
#include <cstdint>
#include <string>

#include "graph/graph.h"

namespace tessera::graph {

struct ModelOptions {
  int64_t batch = 1;
  std::string layout = "NCHW";  // "NCHW" or "NHWC"
};

// Throws tessera::Error naming the model: an unknown zoo name lists the
// known ones; a file that is not a model says why.
Graph load_model(const std::string& model, const ModelOptions& options = {});

}  // namespace tessera::graph
