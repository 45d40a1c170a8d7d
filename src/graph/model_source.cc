#include "graph/model_source.h"

#include <cctype>
#include <filesystem>

#include "graph/onnx_import.h"
#include "graph/zoo.h"
#include "runtime/artifact.h"
#include "support/quoted.h"
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
    onnx.input_shapes = options.input_shapes;
    onnx.dims = options.dims;
    return import_onnx(model, onnx);
  }
  if (!options.input_shapes.empty() || !options.dims.empty())
    throw Error("'" + model + "': --shape and --dim apply to ONNX models (a zoo model takes --batch)");
  return get_network(model, options.batch > 0 ? options.batch : 1, options.layout);
}

namespace {

// "NAME=VALUE" split at its first '='.
std::pair<std::string, std::string> name_and_value(const std::string& flag, const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw Error(flag + " " + support::quoted(text) + ": expected NAME=VALUE");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

int64_t positive_size(const std::string& flag, const std::string& text, const std::string& part) {
  if (part.find("..") != std::string::npos)
    throw Error(flag + " " + support::quoted(text) + ": a range of sizes (" + part +
                ") would keep the dimension symbolic, which Tessera does not compile yet; give one size");
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(part, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != part.size() || v <= 0)
    throw Error(flag + " " + support::quoted(text) + ": " + support::quoted(part) + " is not a positive size");
  return v;
}

}  // namespace

void parse_shape_flag(const std::string& text, ModelOptions& options) {
  const auto [name, dims] = name_and_value("--shape", text);
  Shape shape;
  for (size_t start = 0;;) {
    const size_t x = dims.find('x', start);
    shape.push_back(positive_size("--shape", text, dims.substr(start, x == std::string::npos ? x : x - start)));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  options.input_shapes[name] = shape;
}

void parse_dim_flag(const std::string& text, ModelOptions& options) {
  const auto [name, size] = name_and_value("--dim", text);
  options.dims[name] = positive_size("--dim", text, size);
}

}  // namespace tessera::graph
