#include "graph/model_source.h"

#include "graph/zoo.h"
#include "tessera/error.h"

namespace tessera::graph {

Graph load_model(const std::string& model, const ModelOptions& options) {
  if (model.size() > 5 && model.substr(model.size() - 5) == ".onnx")
    throw Error("'" + model + "': ONNX import is not available in this build yet");
  return get_network(model, options.batch, options.layout);
}

}  // namespace tessera::graph
