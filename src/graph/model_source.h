#pragma once
// Where a network comes from: a model-zoo name ("resnet-18") or an ONNX file
// (any existing file, or a path ending in .onnx in any case).
#include <cstdint>
#include <map>
#include <string>

#include "graph/graph.h"

namespace tessera::graph {

struct ModelOptions {
  int64_t batch = 0;  // 0: the model's own (1 for the zoo and for a symbolic ONNX batch)
  std::string layout = "NCHW";  // "NCHW" or "NHWC"
  // ONNX models only: whole input shapes by input name, and sizes of
  // symbolic dimensions by name (OnnxImportOptions).
  std::map<std::string, Shape> input_shapes;
  std::map<std::string, int64_t> dims;
};

// "NAME=1x128" (--shape) or "sequence=128" (--dim) into `options`; throws
// tessera::Error naming the flag and the text. A range ("1..512") is refused:
// dimensions that vary at run time are not compiled yet.
void parse_shape_flag(const std::string& text, ModelOptions& options);
void parse_dim_flag(const std::string& text, ModelOptions& options);

// Throws tessera::Error naming the model: an unknown zoo name lists the
// known ones; a file that is not a model says why.
Graph load_model(const std::string& model, const ModelOptions& options = {});

}  // namespace tessera::graph
