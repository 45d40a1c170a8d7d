#include "graph/model_source.h"

#include <cctype>
#include <filesystem>

#include "graph/onnx_import.h"
#include "graph/zoo.h"
#include "runtime/artifact.h"
#include "tessera/error.h"

namespace tessera::graph {

namespace {

bool ends_with_onnx(const std::string& path) {
  if (path.size() <= 5) return false;
  std::string tail = path.substr(path.size() - 5);
  for (char& c : tail) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return tail == ".onnx";
}

}  // namespace

Graph load_model(const std::string& model, const ModelOptions& options) {
  // A file is read as a file, whatever its name: one named like a zoo model
  // is the user's model, not the zoo's; M.ONNX is ONNX.
  std::error_code ec;
  const bool file = std::filesystem::is_regular_file(model, ec);
  if (file && runtime::is_artifact_file(model))
    throw Error("'" + model + "' is a compiled Tessera artifact, not a model: run it with `tessera run` or `tessera bench`");
  if (file || ends_with_onnx(model)) {
    if (options.layout != "NCHW")
      throw Error("'" + model + "': an ONNX model keeps the layout it was exported in (--layout applies to the zoo)");
    OnnxImportOptions onnx;
    onnx.batch = options.batch;
    onnx.default_batch = 1;
    return import_onnx(model, onnx);
  }
  return get_network(model, options.batch > 0 ? options.batch : 1, options.layout);
}

}  // namespace tessera::graph
