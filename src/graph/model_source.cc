#include "graph/model_source.h"

#include "graph/onnx_import.h"
#include "graph/zoo.h"
#include "tessera/error.h"

namespace tessera::graph {

Graph load_model(const std::string& model, const ModelOptions& options) {
  if (model.size() > 5 && model.substr(model.size() - 5) == ".onnx") {
    if (options.layout != "NCHW")
      throw Error("'" + model + "': an ONNX model keeps the layout it was exported in (--layout applies to the zoo)");
    OnnxImportOptions onnx;
    onnx.batch = options.batch;
    return import_onnx(model, onnx);
  }
  return get_network(model, options.batch, options.layout);
}

}  // namespace tessera::graph
