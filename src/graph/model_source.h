#pragma once
// Where a network comes from: a model-zoo name ("resnet-18") or an ONNX file
// (any existing file, or a path ending in .onnx in any case).
#include <cstdint>
#include <string>

#include "graph/graph.h"

namespace tessera::graph {

struct ModelOptions {
  int64_t batch = 0;  // 0: the model's own (1 for the zoo and for a symbolic ONNX batch)
  std::string layout = "NCHW";  // "NCHW" or "NHWC"
};

// Throws tessera::Error naming the model: an unknown zoo name lists the
// known ones; a file that is not a model says why.
Graph load_model(const std::string& model, const ModelOptions& options = {});

}  // namespace tessera::graph
