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

bool is_onnx_model(const std::string& model) {
  std::error_code ec;
  return std::filesystem::is_regular_file(model, ec) || ends_with_onnx(model);
}

Graph load_model(const std::string& model, const ModelOptions& options) {
  // A file is read as a file, whatever its name: one named like a zoo model
  // is the user's model, not the zoo's; M.ONNX is ONNX.
  std::error_code ec;
  const bool file = std::filesystem::is_regular_file(model, ec);
  if (file && runtime::is_artifact_file(model))
    throw Error("'" + model + "' is a compiled Tessera artifact, not a model: run it with `tessera run` or `tessera bench`");
  if (options.varying)
    throw Error("'" + model + "': " + options.varying->name + " is given a range (" +
                std::to_string(options.varying->min) + ".." + std::to_string(options.varying->max) +
                "): `tessera compile` makes one artifact for it; this command takes one size");
  if (is_onnx_model(model)) {
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

// "MIN..MAX" as the model's varying dimension `name` (one per model: a
// second range must be the same one); returns MAX, the size the model's
// shape holds in its place.
int64_t varying_range(const std::string& flag, const std::string& text, const std::string& part,
                      const std::string& name, ModelOptions& options) {
  const size_t dots = part.find("..");
  const int64_t min = positive_size(flag, text, part.substr(0, dots));
  const int64_t max = positive_size(flag, text, part.substr(dots + 2));
  if (max <= min)
    throw Error(flag + " " + support::quoted(text) + ": the range " + part + " must rise (give one size instead)");
  if (options.varying && (options.varying->min != min || options.varying->max != max || flag == "--dim"))
    throw Error(flag + " " + support::quoted(text) + ": " + options.varying->name +
                " already varies; one dimension per model may vary");
  if (!options.varying) options.varying = VaryingDimension{name, min, max, default_buckets(min, max)};
  return max;
}

}  // namespace

void parse_shape_flag(const std::string& text, ModelOptions& options) {
  const auto [name, dims] = name_and_value("--shape", text);
  Shape shape;
  for (size_t start = 0;;) {
    const size_t x = dims.find('x', start);
    const std::string part = dims.substr(start, x == std::string::npos ? x : x - start);
    if (part.find("..") != std::string::npos) {
      const std::string symbol = name + "[" + std::to_string(shape.size()) + "]";
      options.varying_shape_axes.emplace_back(name, shape.size());
      shape.push_back(varying_range("--shape", text, part, symbol, options));
    } else {
      shape.push_back(positive_size("--shape", text, part));
    }
    if (x == std::string::npos) break;
    start = x + 1;
  }
  options.input_shapes[name] = shape;
}

void parse_dim_flag(const std::string& text, ModelOptions& options) {
  const auto [name, size] = name_and_value("--dim", text);
  if (size.find("..") != std::string::npos) {
    if (!options.varying_shape_axes.empty())
      throw Error("--dim " + support::quoted(text) + ": a --shape range already varies; one dimension per model may vary");
    options.dims[name] = varying_range("--dim", text, size, name, options);
    return;
  }
  options.dims[name] = positive_size("--dim", text, size);
}

void parse_buckets_flag(const std::string& text, ModelOptions& options) {
  if (!options.varying)
    throw Error("--buckets " + support::quoted(text) + ": no dimension varies (give a range: --dim NAME=MIN..MAX)");
  std::vector<int64_t> sizes;
  for (size_t start = 0;;) {
    const size_t comma = text.find(',', start);
    sizes.push_back(positive_size("--buckets", text, text.substr(start, comma == std::string::npos ? comma : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  try {
    options.varying->buckets = checked_buckets(sizes, options.varying->min, options.varying->max);
    options.varying->listed = true;
  } catch (const Error& e) {
    throw Error("--buckets " + support::quoted(text) + ": " + e.what());
  }
}

ModelOptions ModelOptions::at_size(int64_t size) const {
  ModelOptions o = *this;
  o.varying.reset();
  o.varying_shape_axes.clear();
  if (!varying) return o;
  if (varying_shape_axes.empty()) o.dims[varying->name] = size;
  for (const auto& [input, axis] : varying_shape_axes) o.input_shapes[input][axis] = size;
  return o;
}

}  // namespace tessera::graph
