#pragma once
// ONNX models (opsets 11-18) as Tessera graphs. Initializers become constants;
// shape computations on static shapes (Shape -> Gather -> Concat -> Reshape,
// as exporters write a flatten) are folded at import, so the graph holds only
// tensor operators. Every refusal is one tessera::Error naming the file and
// the node (its name and op_type) or the field: an unsupported operator, a
// dimension that is not fixed, a cycle, a missing input, a damaged file.
#include <cstdint>
#include <map>
#include <string>

#include "graph/graph.h"

namespace tessera::graph {

struct OnnxImportOptions {
  // The batch asked for: fixes a symbolic first dimension of every input, and
  // must equal a fixed one (0: none asked for).
  int64_t batch = 0;
  // A symbolic first dimension's size when no batch is asked for (0: none:
  // such an input is an error asking for a batch).
  int64_t default_batch = 0;
  // Fixes whole input shapes by input name; wins over `batch` and `dims`.
  std::map<std::string, Shape> input_shapes;
  // Fixes symbolic dimensions by their name (dim_param "sequence" -> 128) in
  // every input that has them; wins over `batch`.
  std::map<std::string, int64_t> dims;
};

Graph import_onnx(const std::string& path, const OnnxImportOptions& options = {});

}  // namespace tessera::graph
