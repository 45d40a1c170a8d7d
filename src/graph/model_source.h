#pragma once
// Where a network comes from: a model-zoo name ("resnet-18") or an ONNX file
// (any existing file, or a path ending in .onnx in any case).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/varying_dimension.h"

namespace tessera::graph {

struct ModelOptions {
  int64_t batch = 0;  // 0: the model's own (1 for the zoo and for a symbolic ONNX batch)
  std::string layout = "NCHW";  // "NCHW" or "NHWC"
  // ONNX models only: whole input shapes by input name, and sizes of
  // symbolic dimensions by name (OnnxImportOptions).
  std::map<std::string, Shape> input_shapes;
  std::map<std::string, int64_t> dims;
  // A dimension given a range (--dim sequence=1..512, or --shape
  // ids=1x1..512): compile_varying loads the model at one size of it at a
  // time (at_size); load_model refuses it.
  std::optional<VaryingDimension> varying;
  std::vector<std::pair<std::string, size_t>> varying_shape_axes;  // (input, axis) of --shape ranges

  // These options with the varying dimension fixed at `size`.
  ModelOptions at_size(int64_t size) const;
};

// "NAME=1x128" (--shape) or "sequence=128" (--dim) into `options`; a range
// ("1..512", one per model) makes the dimension vary, with the default
// buckets. Throws tessera::Error naming the flag and the text.
void parse_shape_flag(const std::string& text, ModelOptions& options);
void parse_dim_flag(const std::string& text, ModelOptions& options);
// "16,64,256" (--buckets) as the varying dimension's buckets (its max added).
void parse_buckets_flag(const std::string& text, ModelOptions& options);

// Whether `model` is read as an ONNX file (any existing file, or a name
// ending in .onnx) rather than a zoo name.
bool is_onnx_model(const std::string& model);

// Throws tessera::Error naming the model: an unknown zoo name lists the
// known ones; a file that is not a model says why.
Graph load_model(const std::string& model, const ModelOptions& options = {});

}  // namespace tessera::graph
