// Reading an ONNX model: the file and its opset, tensors (raw or typed, sizes
// checked before anything is allocated), graph inputs and their shapes, an
// order of the nodes that follows their data, the values flowing between
// them and the nodes' attributes. The operators themselves are converted in
// onnx_operators.cc.
#include "graph/onnx_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "graph/interpreter.h"
#include "graph/onnx_importer.h"
#include "support/checked_math.h"
#include "support/quoted.h"

namespace tessera::graph {
namespace onnx_importer {

// A name from the file as a graph name: control bytes (which would break a
// one-line message) as '?', at most 256 characters.
std::string clean(const std::string& name) {
  std::string s = name.substr(0, 256);
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return s;
}

// "[3, 8, 7, 7]", or the rank alone for a long list.
std::string dims_text(const onnx::TensorProto& t) {
  if (t.dims_size() > 8) return "(rank " + std::to_string(t.dims_size()) + ")";
  std::string s = "[";
  for (int i = 0; i < t.dims_size(); ++i) s += (i ? ", " : "") + std::to_string(t.dims(i));
  return s + "]";
}

std::string element_type_name(int t) {
  return onnx::TensorProto_DataType_IsValid(t) ? onnx::TensorProto_DataType_Name(t) : "type " + std::to_string(t);
}

Graph Importer::run() {
  read_model();
  const onnx::GraphProto& g = model_.graph();
  for (const auto& init : g.initializer()) add_initializer(init);
  for (const auto& in : g.input())
    if (!values_.count(in.name())) add_input(in);
  for (const auto& [name, shape] : options_.input_shapes)
    if (!std::any_of(g.input().begin(), g.input().end(), [&](const auto& in) { return in.name() == name; }))
      fail("a shape is given for input " + support::quoted(name) + ", which the model does not have");
  for (const auto& [symbol, size] : options_.dims) {
    if (size <= 0) fail("dimension " + support::quoted(symbol) + " is given size " + std::to_string(size));
    const bool used = std::any_of(g.input().begin(), g.input().end(), [&](const auto& in) {
      const auto& dims = in.type().tensor_type().shape().dim();
      return std::any_of(dims.begin(), dims.end(), [&](const auto& d) { return d.dim_param() == symbol; });
    });
    if (!used) fail("a size is given for dimension " + support::quoted(symbol) + ", which no input has");
  }
  for (const onnx::NodeProto* node : topological_order(g)) convert(*node);
  std::vector<NodeId> outputs;
  for (const auto& out : g.output()) outputs.push_back(activation(out.name(), "graph output"));
  if (outputs.empty()) fail("the graph has no outputs");
  Graph graph = b_.finish(outputs);
  // Outputs answer to the names the model gives them (get_output("logits")),
  // also where an inner node took the name first (a Conv named after its
  // output, before the bias_add that computes that output): it gives it up.
  for (int i = 0; i < g.output_size(); ++i) {
    const std::string want = clean(g.output(i).name());
    const std::optional<NodeId> taker = graph.find(want);
    if (taker == outputs[i]) continue;
    if (taker) {
      if (std::find(outputs.begin(), outputs.end(), *taker) != outputs.end() ||
          graph.node(*taker).op == Op::kInput)
        continue;  // another output or an input: both keep their names
      std::string inner = want + ".inner";
      for (int k = 1; graph.find(inner); ++k) inner = want + ".inner_" + std::to_string(k);
      graph.rename(*taker, inner);
    }
    graph.rename(outputs[i], want);
  }
  return graph;
}

std::string Importer::describe(const onnx::NodeProto& n) const {
  return "node " + support::quoted(n.name().empty() ? n.output_size() ? n.output(0) : "?" : n.name()) + " (" +
         support::quoted(n.op_type()) + ")";
}

void Importer::read_model() {
  std::ifstream in(path_, std::ios::binary | std::ios::ate);
  if (!in) throw Error("cannot open ONNX model '" + path_ + "'");
  const std::streamoff size = in.tellg();
  if (size <= 0) fail("the file is empty");
  if (static_cast<size_t>(size) > kMaxFileBytes) fail("larger than 2 GiB");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(bytes.data(), size);
  if (!model_.ParseFromString(bytes)) fail("not an ONNX model (the protobuf does not parse: damaged or truncated?)");
  if (!model_.has_graph() || model_.graph().node_size() == 0) fail("not an ONNX model (no graph nodes)");
  opset_ = -1;
  for (const auto& o : model_.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
  if (opset_ < 0) fail("no ai.onnx opset is imported");
  if (opset_ < kMinOpset || opset_ > kMaxOpset)
    fail("opset " + std::to_string(opset_) + " is not supported (" + std::to_string(kMinOpset) + " to " +
         std::to_string(kMaxOpset) + "; re-export with opset_version=17)");
}

Shape Importer::dims_of(const onnx::TensorProto& t, const std::string& what) const {
  Shape dims(t.dims().begin(), t.dims().end());
  for (int64_t d : dims)
    if (d < 0) fail(what + " has a negative dimension");
  support::bounded_product(dims, [&] { return "ONNX model '" + path_ + "': " + what; });
  return dims;
}

std::string Importer::external_bytes(const onnx::TensorProto& t, const std::string& what) const {
  std::string location;
  int64_t offset = 0;
  for (const auto& entry : t.external_data()) {
    if (entry.key() == "location") location = entry.value();
    if (entry.key() == "offset") {
      try {
        offset = std::stoll(entry.value());
      } catch (const std::exception&) {
        fail(what + ": external data offset " + support::quoted(entry.value()) + " is not a number");
      }
    }
  }
  if (location.empty()) fail(what + " keeps its data in an external file but names none");
  const std::filesystem::path relative(location);
  const bool escapes = std::any_of(relative.begin(), relative.end(), [](const auto& part) { return part == ".."; });
  if (relative.is_absolute() || escapes)
    fail(what + ": its external file " + support::quoted(location) + " lies outside the model's folder");
  size_t element = 0;
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: case onnx::TensorProto::INT32: element = 4; break;
    case onnx::TensorProto::INT64: element = 8; break;
    case onnx::TensorProto::BOOL: case onnx::TensorProto::INT8: case onnx::TensorProto::UINT8: element = 1; break;
    default: fail(what + " has element type " + element_type_name(t.data_type()) + " (float32 or integer shapes only)");
  }
  const size_t length = static_cast<size_t>(support::bounded_product(dims_of(t, what), "dims")) * element;
  const std::filesystem::path file = std::filesystem::path(path_).parent_path() / relative;
  std::ifstream in(file, std::ios::binary);
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(file, ec);
  if (!in || ec) fail(what + ": its external file " + support::quoted(file.string()) + " cannot be opened");
  // Checked before allocating: a hostile file's dims can claim terabytes.
  if (offset < 0 || static_cast<uintmax_t>(offset) > size || size - static_cast<uintmax_t>(offset) < length)
    fail(fmt::format("{}: its external file {} holds {} bytes, not the {} its dims need at offset {} (truncated?)",
                     what, support::quoted(file.string()), size, length, offset));
  in.seekg(offset);
  std::string bytes(length, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(length));
  if (static_cast<size_t>(in.gcount()) != length) fail(what + ": reading " + support::quoted(file.string()) + " failed");
  return bytes;
}

Value Importer::tensor_value(const onnx::TensorProto& t, const std::string& what) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    onnx::TensorProto inline_copy = t;  // the metadata; its data is in the file
    inline_copy.clear_external_data();
    inline_copy.set_data_location(onnx::TensorProto::DEFAULT);
    inline_copy.set_raw_data(external_bytes(t, what));
    return tensor_value(inline_copy, what);
  }
  if (t.has_segment()) fail(what + " is segmented (not supported)");
  const Shape dims = dims_of(t, what);
  const int64_t count = support::bounded_product(dims, "dims");
  Value v;
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: {
      auto data = elements<float>(t, 4, t.float_data(), count, what);
      runtime::NDArray a(dims.empty() ? Shape{1} : dims);
      std::copy(data.begin(), data.end(), a.data());
      v.node = b_.constant(t.name().empty() ? "constant" : clean(t.name()), std::move(a));
      return v;
    }
    case onnx::TensorProto::INT64: v.ints = elements<int64_t>(t, 8, t.int64_data(), count, what); break;
    case onnx::TensorProto::BOOL: {  // masks known now: 0 and 1
      std::vector<int64_t> bits;
      if (t.has_raw_data()) {
        auto bytes = elements<uint8_t>(t, 1, t.int32_data(), count, what);
        bits.assign(bytes.begin(), bytes.end());
      } else {
        auto i32 = elements<int32_t>(t, 4, t.int32_data(), count, what);
        bits.assign(i32.begin(), i32.end());
      }
      for (int64_t& b : bits) b = b != 0;
      v.ints = std::move(bits);
      break;
    }
    case onnx::TensorProto::INT32: {
      auto i32 = elements<int32_t>(t, 4, t.int32_data(), count, what);
      v.ints = std::vector<int64_t>(i32.begin(), i32.end());
      break;
    }
    case onnx::TensorProto::INT8: case onnx::TensorProto::UINT8: {  // quantized weights, zero points
      // raw_data holds the bytes; the typed field an int32 per element.
      const bool is_signed = t.data_type() == onnx::TensorProto::INT8;
      std::vector<int64_t> values;
      if (t.has_raw_data()) {
        auto bytes = elements<uint8_t>(t, 1, t.int32_data(), count, what);
        for (uint8_t b : bytes) values.push_back(is_signed ? static_cast<int8_t>(b) : b);
      } else {
        auto i32 = elements<int32_t>(t, 4, t.int32_data(), count, what);
        values.assign(i32.begin(), i32.end());
      }
      v.ints = std::move(values);
      break;
    }
    default:
      fail(what + " has element type " + element_type_name(t.data_type()) + " (float32, integers, int8 or uint8 only)");
  }
  v.element_type = t.data_type();
  v.ints_shape = dims;
  return v;
}

void Importer::add_initializer(const onnx::TensorProto& t) {
  values_[t.name()] = tensor_value(t, "initializer " + support::quoted(t.name()));
}

void Importer::add_input(const onnx::ValueInfoProto& in) {
  const std::string what = "input " + support::quoted(in.name());
  if (!in.type().has_tensor_type()) fail(what + " is not a tensor");
  const auto& tt = in.type().tensor_type();
  // Integer inputs (token ids, masks) compute as float32, exact up to 2^24.
  const bool integer = tt.elem_type() == onnx::TensorProto::INT64 || tt.elem_type() == onnx::TensorProto::INT32 ||
                       tt.elem_type() == onnx::TensorProto::BOOL;
  if (tt.elem_type() != onnx::TensorProto::FLOAT && !integer)
    fail(what + " has element type " + element_type_name(tt.elem_type()) +
         "; Tessera runs float32 models with float32 or integer inputs");
  Shape shape;
  if (auto it = options_.input_shapes.find(in.name()); it != options_.input_shapes.end()) {
    shape = it->second;
  } else {
    if (!tt.has_shape()) fail(what + " has no shape (give one with the input shape option)");
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      const auto& dim = tt.shape().dim(d);
      if (dim.has_dim_value() && dim.dim_value() <= 0) {
        // 0 and -1 are not sizes: the file is damaged, not asking for a batch.
        fail(fmt::format("{} dimension {} is {}: a dimension must be a positive size, or symbolic (dim_param) for "
                         "a batch",
                         what, d, dim.dim_value()));
      } else if (dim.has_dim_value()) {
        if (d == 0 && options_.batch > 0 && options_.batch != dim.dim_value())
          fail(fmt::format("{} has a fixed batch of {}; it cannot run at batch {} (export it with a dynamic batch "
                           "axis)",
                           what, dim.dim_value(), options_.batch));
        shape.push_back(dim.dim_value());
      } else if (auto named = dim.has_dim_param() ? options_.dims.find(dim.dim_param()) : options_.dims.end();
                 named != options_.dims.end()) {
        shape.push_back(named->second);
      } else if (d == 0 && (options_.batch > 0 || options_.default_batch > 0)) {
        shape.push_back(options_.batch > 0 ? options_.batch : options_.default_batch);
      } else {
        const std::string symbol = dim.has_dim_param() ? " (" + support::quoted(dim.dim_param(), 32) + ")" : "";
        fail(what + " dimension " + std::to_string(d) + symbol + " is not fixed" +
             (d == 0 ? ": give a batch size (--batch N, OnnxImportOptions::batch)"
                     : ": give its size (" + (dim.has_dim_param() ? "--dim " + dim.dim_param() + "=N or " : std::string()) +
                           "--shape " + in.name() + "=DIMS)"));
      }
    }
  }
  support::bounded_product(shape, [&] { return "ONNX model '" + path_ + "': " + what; });
  Value v;
  v.node = b_.input(clean(in.name()), shape, integer ? DataType::kInt64 : DataType::kFloat32);
  values_[in.name()] = v;
}

std::vector<const onnx::NodeProto*> Importer::topological_order(const onnx::GraphProto& g) {
  std::map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& out : g.node(i).output()) {
      if (out.empty()) continue;
      if (values_.count(out))
        fail(describe(g.node(i)) + " writes " + support::quoted(out) + ", which is a graph input or initializer");
      if (auto [it, added] = producer.emplace(out, i); !added)
        fail(describe(g.node(i)) + " writes " + support::quoted(out) + ", which " + describe(g.node(it->second)) +
             " also writes");
    }
  std::vector<int> state(g.node_size(), 0);  // 0 new, 1 on the path, 2 done
  std::vector<const onnx::NodeProto*> order;
  std::vector<std::pair<int, int>> stack;  // (node, index of the next input to visit)
  for (int root = 0; root < g.node_size(); ++root) {
    if (state[root] != 0) continue;
    stack.push_back({root, 0});
    state[root] = 1;
    while (!stack.empty()) {
      auto& [i, next] = stack.back();
      const onnx::NodeProto& node = g.node(i);
      if (next == node.input_size()) {
        state[i] = 2;
        order.push_back(&node);
        stack.pop_back();
        continue;
      }
      const std::string& in = node.input(next++);
      if (in.empty() || values_.count(in)) continue;
      auto p = producer.find(in);
      if (p == producer.end())
        fail(describe(node) + " reads " + support::quoted(in) + ", which no node, input or initializer provides");
      if (state[p->second] == 1)
        fail(describe(g.node(p->second)) + " depends on its own output (the graph has a cycle)");
      if (state[p->second] == 0) {
        state[p->second] = 1;
        stack.push_back({p->second, 0});
      }
    }
  }
  return order;
}

const Value& Importer::value(const std::string& name, const std::string& who) const {
  auto it = values_.find(name);
  if (it == values_.end()) fail(who + " reads " + support::quoted(name) + ", which is not computed");
  return it->second;
}

NodeId Importer::activation(const std::string& name, const std::string& who) {
  const Value& v = value(name, who);
  if (v.node >= 0) return v.node;
  // An integer tensor used as data: as float constant (rare, e.g. a shape added).
  if (support::bounded_product(v.ints_shape, "shape") != static_cast<int64_t>(v.ints->size()))
    fail(who + " reads " + support::quoted(name) + ", an integer tensor whose shape does not match its values");
  runtime::NDArray a(v.ints_shape.empty() ? Shape{1} : v.ints_shape);
  for (size_t i = 0; i < v.ints->size(); ++i) a[static_cast<int64_t>(i)] = static_cast<float>((*v.ints)[i]);
  return b_.constant(clean(name), std::move(a));
}

void Importer::set_broadcast_ints(const onnx::NodeProto& n, const std::vector<const Value*>& operands,
                                  const std::function<int64_t(const std::vector<int64_t>&)>& f) {
  Shape out;
  for (const Value* v : operands) out = ops::broadcast_shape(n.op_type(), out, v->ints_shape);
  std::vector<int64_t> values(static_cast<size_t>(support::bounded_product(out, describe(n)))), coord,
      args(operands.size());
  for (size_t i = 0; i < values.size(); ++i) {
    ops::unravel(static_cast<int64_t>(i), out, coord);
    for (size_t k = 0; k < operands.size(); ++k)
      args[k] = (*operands[k]->ints)[static_cast<size_t>(ops::broadcast_offset(operands[k]->ints_shape, coord))];
    values[i] = f(args);
  }
  set_ints(n, std::move(values), out);
}

const std::vector<int64_t>& Importer::ints(const onnx::NodeProto& n, int input) const {
  const Value& v = value(n.input(input), describe(n));
  if (!v.ints) fail(describe(n) + ": input " + std::to_string(input) + " must be a constant integer tensor");
  return *v.ints;
}

const runtime::NDArray* Importer::constant_of(const onnx::NodeProto& n, int input) const {
  const Value& v = value(n.input(input), describe(n));
  if (v.node < 0) return nullptr;
  const Node& node = b_.graph().node(v.node);
  if (node.op == Op::kConstant) return node.value.get();
  // A dequantized weight (DequantizeLinear of integers): its values, once.
  if (node.op == Op::named("dequantize_per_channel")) {
    auto it = dequantized_.find(v.node);
    if (it == dequantized_.end()) {
      std::vector<const runtime::NDArray*> args;
      for (NodeId in : node.inputs) args.push_back(b_.graph().node(in).value.get());
      it = dequantized_.emplace(v.node, evaluate(b_.graph(), node, args)).first;
    }
    return &it->second;
  }
  return nullptr;
}

void Importer::set_output(const onnx::NodeProto& n, NodeId id, int index) {
  if (n.output_size() > index && !n.output(index).empty()) values_[n.output(index)] = Value{id, std::nullopt, {}};
}

void Importer::set_ints(const onnx::NodeProto& n, std::vector<int64_t> v, Shape shape) {
  values_[n.output(0)] = Value{-1, std::move(v), std::move(shape)};
}

const onnx::AttributeProto* Importer::attr(const onnx::NodeProto& n, const std::string& name) const {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t Importer::attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback) const {
  const auto* a = attr(n, name);
  return a ? a->i() : fallback;
}

float Importer::attr_float(const onnx::NodeProto& n, const std::string& name, float fallback) const {
  const auto* a = attr(n, name);
  return a ? a->f() : fallback;
}

std::vector<int64_t> Importer::attr_ints(const onnx::NodeProto& n, const std::string& name, std::vector<int64_t> fallback) const {
  const auto* a = attr(n, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
}

std::string Importer::attr_string(const onnx::NodeProto& n, const std::string& name, const std::string& fallback) const {
  const auto* a = attr(n, name);
  return a ? a->s() : fallback;
}

}  // namespace onnx_importer

Graph import_onnx(const std::string& path, const OnnxImportOptions& options) {
  GOOGLE_PROTOBUF_VERIFY_VERSION;
  return onnx_importer::Importer(path, options).run();
}

}  // namespace tessera::graph
