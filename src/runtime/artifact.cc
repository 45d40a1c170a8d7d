#include "runtime/artifact.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <string_view>
#include <sstream>

#include <zlib.h>

#include "runtime/stored_values.h"
#include "support/bounded_json.h"
#include "support/half.h"
#include "support/quoted.h"
#include "support/write_file.h"
#include "tessera/error.h"

namespace tessera::runtime {
namespace {

constexpr char kMagic[8] = {'T', 'E', 'S', 'S', 'E', 'R', 'A', '\0'};
// 3: a quantized constant's params in its own type (int8, uint8, int32), not float32.
constexpr uint32_t kVersion = 3;
constexpr uint32_t kMaxSections = 64;
constexpr uint32_t kMaxSectionName = 64;

template <class T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

uint32_t crc_of(std::string_view bytes) {
  return static_cast<uint32_t>(
      crc32_z(crc32_z(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

void put_section(std::string& out, const std::string& name, const std::string& bytes) {
  put<uint32_t>(out, static_cast<uint32_t>(name.size()));
  out += name;
  put<uint64_t>(out, bytes.size());
  put<uint32_t>(out, crc_of(bytes));
  out += bytes;
}

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Whether the stream's next bytes are the magic.
bool read_magic(std::istream& in) {
  char magic[sizeof(kMagic)] = {};
  return in.read(magic, sizeof(magic)) && std::memcmp(magic, kMagic, sizeof(kMagic)) == 0;
}

// Reads an artifact's fields from its file in order; running past the end is
// a truncation. Nothing is read before the magic shows it is an artifact, so
// a large file of something else costs nothing.
class Reader {
 public:
  explicit Reader(const std::string& path) : in_(path, std::ios::binary | std::ios::ate), path_(path) {
    if (!in_) throw Error("cannot open artifact '" + path + "'");
    const std::streamoff size = in_.tellg();
    if (size < 0) throw Error("cannot read artifact '" + path + "': not a regular file");
    size_ = static_cast<uint64_t>(size);
    in_.seekg(0);
    if (!read_magic(in_))
      throw Error("'" + path + "' is not a Tessera artifact (it does not start with TESSERA)");
    pos_ = sizeof(kMagic);
  }

  template <class T>
  T get(const std::string& what) {
    T value;
    read_into(reinterpret_cast<char*>(&value), sizeof(T), what);
    return value;
  }
  std::string get_bytes(uint64_t n, const std::string& what) {
    require(n, what);
    std::string bytes(n, '\0');
    read_into(bytes.data(), n, what);
    return bytes;
  }
  // Reads n bytes into `out`, which holds them.
  void read_into(char* out, uint64_t n, const std::string& what) {
    require(n, what);
    if (!in_.read(out, static_cast<std::streamsize>(n))) throw Error("cannot read artifact '" + path_ + "'");
    pos_ += n;
  }
  // Throws when fewer than n bytes are left: checked before allocating them.
  void require(uint64_t n, const std::string& what) const {
    if (n > size_ - pos_)
      throw Error("artifact '" + path_ + "' is truncated: " + what + " needs " + std::to_string(n) + " bytes at byte " +
                  std::to_string(pos_) + ", the file has " + std::to_string(size_));
  }
  bool at_end() const { return pos_ == size_; }

 private:
  std::ifstream in_;
  const std::string& path_;
  uint64_t size_ = 0, pos_ = 0;
};

// A constant's bytes as stored: IEEE half for a half tensor (--dtype
// float16: the weights converted when the model is compiled), its own type
// for a quantized one (int8 and uint8 a byte each, int32: a quarter of a
// ResNet's float32 artifact), else float32. In memory every param is float32
// (integers exactly); the executor stores a quantized one in its type again.
void append_param(std::string& out, const NDArray& p, const ExecutableGraph::Tensor& t) {
  if (t.half) {
    const std::vector<uint16_t> halves = support::to_halves(p.data(), p.size());
    out.append(reinterpret_cast<const char*>(halves.data()), halves.size() * sizeof(uint16_t));
    return;
  }
  const size_t at = out.size();
  out.resize(at + static_cast<size_t>(p.size() * stored_element_bytes(t.stored_as)));
  store_values(t.stored_as, p.data(), p.size(), out.data() + at);
}

// The values of a param from its stored bytes (append_param's inverse).
void decode_param(const char* bytes, const ExecutableGraph::Tensor& t, NDArray& p) {
  if (t.half) {
    std::vector<uint16_t> halves(static_cast<size_t>(p.size()));
    std::memcpy(halves.data(), bytes, halves.size() * sizeof(uint16_t));
    support::from_halves(halves.data(), p.size(), p.data());
    return;
  }
  load_values(t.stored_as, bytes, p.size(), p.data());
}

std::string params_bytes(const Artifact& a) {
  if (a.params.size() != a.graph.constants.size())
    throw Error("write_artifact: " + std::to_string(a.params.size()) + " params for " +
                std::to_string(a.graph.constants.size()) + " constants");
  std::string out;
  for (size_t i = 0; i < a.params.size(); ++i) {
    const int t = a.graph.constants[i];
    if (a.params[i].shape() != a.graph.tensors[t].shape)
      throw Error("write_artifact: param " + std::to_string(i) + " does not have the shape of tensor " +
                  support::quoted(a.graph.tensors[t].name));
    append_param(out, a.params[i], a.graph.tensors[t]);
  }
  return out;
}

Error damaged(const std::string& path, const std::string& section) {
  return Error("artifact '" + path + "' is damaged: section " + support::quoted(section) +
               " does not match its checksum (a changed byte; compile the model again)");
}

// The constants' bytes in the file (append_param's types).
uint64_t params_size(const ExecutableGraph& g) {
  uint64_t size = 0;
  for (int t : g.constants) size += static_cast<uint64_t>(g.num_elements(t) * g.element_bytes(t));
  return size;
}

// The "params" section read from the file into the graph's arrays.
std::vector<NDArray> read_params(Reader& r, uint64_t size, uint32_t crc, const ExecutableGraph& g,
                                 const std::string& path) {
  if (size != params_size(g))
    throw Error("artifact '" + path + "': params hold " + std::to_string(size) + " bytes, the graph's " +
                std::to_string(g.constants.size()) + " constants need " + std::to_string(params_size(g)));
  r.require(size, "section \"params\"");
  std::vector<NDArray> params;
  uint32_t sum = crc_of({});
  std::vector<char> stored;
  for (int t : g.constants) {
    NDArray a(g.tensors[t].shape);
    const size_t n = static_cast<size_t>(g.num_elements(t) * g.element_bytes(t));
    if (!g.tensors[t].half && g.tensors[t].stored_as.empty()) {  // float32: straight into the array
      r.read_into(reinterpret_cast<char*>(a.data()), n, "section \"params\"");
      sum = static_cast<uint32_t>(crc32_z(sum, reinterpret_cast<const Bytef*>(a.data()), n));
    } else {
      stored.resize(n);
      r.read_into(stored.data(), n, "section \"params\"");
      sum = static_cast<uint32_t>(crc32_z(sum, reinterpret_cast<const Bytef*>(stored.data()), n));
      decode_param(stored.data(), g.tensors[t], a);
    }
    params.push_back(std::move(a));
  }
  if (sum != crc) throw damaged(path, "params");
  return params;
}

ExecutableGraph graph_from(const std::string& text, const std::string& path) {
  support::JsonLimits limits;
  limits.max_depth = 8;
  limits.max_elements = 1 << 20;
  limits.max_bytes = 256u << 20;
  nlohmann::json graph;
  try {
    graph = support::parse_bounded_json(text, limits);
  } catch (const Error& e) {
    throw Error("artifact '" + path + "': graph section: " + e.what());
  }
  return ExecutableGraph::from_json(graph, "artifact '" + path + "'");
}

nlohmann::json axes_json(const VaryingShapes::Axes& axes) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [axis, factor] : axes) j[std::to_string(axis)] = factor;
  return j;
}

VaryingShapes::Axes axes_from(const nlohmann::json& j) {
  VaryingShapes::Axes axes;
  for (const auto& [axis, factor] : j.items()) axes[std::stoi(axis)] = factor.get<int64_t>();
  return axes;
}

nlohmann::json varying_json(const VaryingShapes& v) {
  nlohmann::json j = {{"name", v.name}, {"min", v.min}, {"max", v.max}, {"buckets", v.buckets}, {"masked", v.masked},
                    {"exact_only", v.exact_only}};
  j["inputs"] = nlohmann::json::object();
  for (const auto& [name, axes] : v.inputs) j["inputs"][name] = axes_json(axes);
  j["outputs"] = nlohmann::json::array();
  for (const auto& axes : v.outputs) j["outputs"].push_back(axes_json(axes));
  return j;
}

VaryingShapes varying_from(const std::string& text, const std::string& path, size_t smaller) {
  const std::string where = "artifact '" + path + "': section \"varying\"";
  VaryingShapes v;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    v.name = j.at("name").get<std::string>();
    v.min = j.at("min").get<int64_t>();
    v.max = j.at("max").get<int64_t>();
    v.buckets = j.at("buckets").get<std::vector<int64_t>>();
    v.masked = j.at("masked").get<bool>();
    v.exact_only = j.at("exact_only").get<std::string>();
    for (const auto& [name, axes] : j.at("inputs").items()) v.inputs[name] = axes_from(axes);
    for (const auto& axes : j.at("outputs")) v.outputs.push_back(axes_from(axes));
  } catch (const std::exception& e) {
    throw Error(where + ": " + e.what());
  }
  bool ordered = !v.buckets.empty() && v.buckets.front() >= v.min && v.buckets.back() == v.max;
  for (size_t i = 1; i < v.buckets.size(); ++i) ordered = ordered && v.buckets[i] > v.buckets[i - 1];
  if (!ordered || v.min < 1) throw Error(where + ": buckets that do not rise from min to max");
  if (v.buckets.size() != smaller + 1)
    throw Error(where + ": " + std::to_string(v.buckets.size()) + " buckets, but the file holds " +
                std::to_string(smaller + 1) + " graphs");
  return v;
}

std::string bucket_section(size_t i, const char* part) { return "bucket." + std::to_string(i) + "." + part; }

// A smaller bucket's constants: those equal to one of the largest bucket's
// params refer to it, the others are stored.
std::string own_params_bytes(const ArtifactBucket& b, const Artifact& a) {
  if (b.shared.size() != b.graph.constants.size())
    throw Error("write_artifact: bucket " + std::to_string(b.size) + " shares " + std::to_string(b.shared.size()) +
                " of " + std::to_string(b.graph.constants.size()) + " constants");
  std::string out;
  size_t own = 0;
  for (size_t i = 0; i < b.shared.size(); ++i) {
    if (b.shared[i] >= 0) {
      if (static_cast<size_t>(b.shared[i]) >= a.params.size() ||
          a.params[b.shared[i]].shape() != b.graph.tensors[b.graph.constants[i]].shape)
        throw Error("write_artifact: bucket " + std::to_string(b.size) + " shares a param of another shape");
      continue;
    }
    if (own >= b.own.size()) throw Error("write_artifact: bucket " + std::to_string(b.size) + " lacks a constant");
    append_param(out, b.own[own++], b.graph.tensors[b.graph.constants[i]]);
  }
  return out;
}

// A GPU target's kernels as three sections named `prefix` ("gpu",
// "bucket.0.gpu"), ".cubin" and ".ptx".
void put_gpu_sections(std::string& out, const std::string& prefix, const GpuCode& code) {
  put_section(out, prefix, code.to_json().dump());
  put_section(out, prefix + ".cubin", code.cubin);
  put_section(out, prefix + ".ptx", code.ptx);
}

std::optional<GpuCode> gpu_from(std::map<std::string, std::string>& sections, const std::string& prefix,
                                const std::string& where) {
  if (!sections.count(prefix)) return std::nullopt;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(sections[prefix]);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": its '" + prefix + "' section is not JSON: " + e.what());
  }
  GpuCode code = GpuCode::from_json(j, where);
  code.cubin = std::move(sections[prefix + ".cubin"]);
  code.ptx = std::move(sections[prefix + ".ptx"]);
  return code;
}

ArtifactBucket bucket_from(std::map<std::string, std::string>& sections, size_t i, int64_t size,
                           const Artifact& a, const std::string& path) {
  const std::string where = "artifact '" + path + "': bucket " + std::to_string(size);
  for (const char* part : {"graph", "kernels", "shared", "params"})
    if (!sections.count(bucket_section(i, part)))
      throw Error(where + " has no '" + bucket_section(i, part) + "' section");
  ArtifactBucket b;
  b.size = size;
  b.graph = graph_from(sections.at(bucket_section(i, "graph")), path);
  b.shared_object = sections.at(bucket_section(i, "kernels"));
  try {
    b.shared = nlohmann::json::parse(sections.at(bucket_section(i, "shared"))).get<std::vector<int>>();
  } catch (const std::exception& e) {
    throw Error(where + ": its shared constants: " + e.what());
  }
  if (b.shared.size() != b.graph.constants.size())
    throw Error(where + ": " + std::to_string(b.shared.size()) + " shared entries for " +
                std::to_string(b.graph.constants.size()) + " constants");
  const std::string& bytes = sections.at(bucket_section(i, "params"));
  size_t at = 0;
  for (size_t c = 0; c < b.shared.size(); ++c) {
    const std::vector<int64_t>& shape = b.graph.tensors[b.graph.constants[c]].shape;
    if (b.shared[c] >= 0) {
      if (static_cast<size_t>(b.shared[c]) >= a.params.size() || a.params[b.shared[c]].shape() != shape)
        throw Error(where + ": constant " + std::to_string(c) + " refers to no param of its shape");
      continue;
    }
    NDArray p(shape);
    const int t = b.graph.constants[c];
    const size_t n = static_cast<size_t>(p.size() * b.graph.element_bytes(t));
    if (bytes.size() - at < n) throw Error(where + ": its params are shorter than its constants");
    decode_param(bytes.data() + at, b.graph.tensors[t], p);
    at += n;
    b.own.push_back(std::move(p));
  }
  if (at != bytes.size()) throw Error(where + ": its params are longer than its constants");
  b.gpu = gpu_from(sections, bucket_section(i, "gpu"), where);
  if (b.gpu.has_value() != a.gpu.has_value())
    throw Error(where + (a.gpu ? " has no GPU code, unlike the largest bucket" : " has GPU code, unlike the largest bucket"));
  return b;
}

nlohmann::json kernel_info_json(const std::vector<KernelInfo>& kernels) {
  nlohmann::json j = nlohmann::json::array();
  for (const KernelInfo& k : kernels)
    j.push_back({{"name", k.name}, {"nodes", k.nodes}, {"flop", k.flop}, {"tuned", k.tuned},
                 {"workload_key", k.workload_key}, {"task_key", k.task_key}});
  return j;
}

std::vector<KernelInfo> kernel_info_from(const std::string& bytes, const std::string& path) {
  try {
    std::vector<KernelInfo> kernels;
    for (const nlohmann::json& k : nlohmann::json::parse(bytes))
      kernels.push_back({k.at("name").get<std::string>(), k.at("nodes").get<std::string>(), k.at("flop").get<double>(),
                         k.at("tuned").get<bool>(), k.at("workload_key").get<std::string>(),
                         k.at("task_key").get<std::string>()});
    return kernels;
  } catch (const nlohmann::json::exception& e) {
    throw Error("artifact '" + path + "': its 'kernel_info' section is not what Tessera writes (" + e.what() + ")");
  }
}

}  // namespace

void write_artifact(const Artifact& artifact, const std::string& path) {
  artifact.graph.validate();
  std::string out(kMagic, sizeof(kMagic));
  put<uint32_t>(out, kVersion);
  const size_t smaller = artifact.varying ? artifact.smaller.size() : 0;
  if (artifact.varying && artifact.varying->buckets.size() != smaller + 1)
    throw Error("write_artifact: " + std::to_string(artifact.varying->buckets.size()) + " buckets for " +
                std::to_string(smaller + 1) + " graphs");
  const size_t gpu_sections = artifact.gpu ? 3 : 0;
  const size_t info_sections = artifact.kernel_info.empty() ? 0 : 1;
  const size_t vta_sections = artifact.vta ? 1 : 0;
  if (artifact.vta && artifact.varying) throw Error("write_artifact: a VTA model has no varying dimension");
  put<uint32_t>(out, static_cast<uint32_t>(5 + gpu_sections + info_sections + vta_sections +
                                           (artifact.varying ? 1 + (4 + gpu_sections) * smaller : 0)));
  put_section(out, "target", artifact.target);
  put_section(out, "instruction_sets", joined(artifact.instruction_sets));
  put_section(out, "graph", artifact.graph.to_json().dump());
  put_section(out, "params", params_bytes(artifact));
  put_section(out, "kernels", artifact.shared_object);
  if (artifact.gpu) put_gpu_sections(out, "gpu", *artifact.gpu);
  if (info_sections) put_section(out, "kernel_info", kernel_info_json(artifact.kernel_info).dump());
  if (artifact.vta) put_section(out, "vta", artifact.vta->to_json().dump());
  if (artifact.varying) {
    put_section(out, "varying", varying_json(*artifact.varying).dump());
    for (size_t i = 0; i < smaller; ++i) {
      const ArtifactBucket& b = artifact.smaller[i];
      b.graph.validate();
      put_section(out, bucket_section(i, "graph"), b.graph.to_json().dump());
      put_section(out, bucket_section(i, "kernels"), b.shared_object);
      put_section(out, bucket_section(i, "shared"), nlohmann::json(b.shared).dump());
      put_section(out, bucket_section(i, "params"), own_params_bytes(b, artifact));
      if (b.gpu.has_value() != artifact.gpu.has_value())
        throw Error("write_artifact: bucket " + std::to_string(b.size) + " and the largest disagree on GPU code");
      if (b.gpu) put_gpu_sections(out, bucket_section(i, "gpu"), *b.gpu);
    }
  }

  support::write_file_atomically(path, out);
}

bool is_artifact_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return in && read_magic(in);
}


Artifact read_artifact(const std::string& path) {
  Reader r(path);
  const auto version = r.get<uint32_t>("the format version");
  if (version != kVersion)
    throw Error("artifact '" + path + "' has format version " + std::to_string(version) + "; this runtime reads " +
                std::to_string(kVersion) + " (recompile the model)");
  const auto count = r.get<uint32_t>("the section count");
  if (count > kMaxSections) throw Error("artifact '" + path + "' claims " + std::to_string(count) + " sections");
  Artifact a;
  bool have_graph = false, have_params = false;
  std::map<std::string, std::string> sections;  // all but the weights
  for (uint32_t i = 0; i < count; ++i) {
    const auto name_length = r.get<uint32_t>("a section name's length");
    if (name_length > kMaxSectionName)
      throw Error("artifact '" + path + "': section " + std::to_string(i) + " has a name of " +
                  std::to_string(name_length) + " bytes");
    const std::string name = r.get_bytes(name_length, "a section name");
    const auto size = r.get<uint64_t>("the size of section " + support::quoted(name));
    const auto crc = r.get<uint32_t>("the checksum of section " + support::quoted(name));
    // The writer puts the graph before the weights, so they are read into
    // the arrays the graph sizes.
    if (name == "params") {
      if (!have_graph)
        throw Error("artifact '" + path + "': its 'params' section comes before its 'graph' (not an order Tessera "
                    "writes; compile the model again)");
      if (have_params) throw Error("artifact '" + path + "' has two 'params' sections");
      a.params = read_params(r, size, crc, a.graph, path);
      have_params = true;
      continue;
    }
    std::string bytes = r.get_bytes(size, "section " + support::quoted(name));
    if (crc_of(bytes) != crc) throw damaged(path, name);
    if (name == "graph") {
      a.graph = graph_from(bytes, path);
      have_graph = true;
    }
    sections[name] = std::move(bytes);
  }
  if (!r.at_end()) throw Error("artifact '" + path + "' has bytes after its last section");
  for (const char* required : {"target", "instruction_sets", "graph", "kernels"})
    if (!sections.count(required)) throw Error("artifact '" + path + "' has no '" + std::string(required) + "' section");
  if (!have_params) throw Error("artifact '" + path + "' has no 'params' section");

  a.target = sections["target"];
  a.instruction_sets = split(sections["instruction_sets"]);
  a.shared_object = std::move(sections["kernels"]);
  a.gpu = gpu_from(sections, "gpu", "artifact '" + path + "'");
  if (sections.count("kernel_info")) a.kernel_info = kernel_info_from(sections["kernel_info"], path);
  if (sections.count("vta")) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(sections["vta"]);
    } catch (const nlohmann::json::exception& e) {
      throw Error("artifact '" + path + "': its 'vta' section is not JSON (" + e.what() + ")");
    }
    a.vta = VtaCode::from_json(j, "artifact '" + path + "'");
  }
  if (sections.count("varying")) {
    size_t smaller = 0;
    while (sections.count(bucket_section(smaller, "graph"))) ++smaller;
    a.varying = varying_from(sections["varying"], path, smaller);
    for (size_t i = 0; i < smaller; ++i) a.smaller.push_back(bucket_from(sections, i, a.varying->buckets[i], a, path));
  }
  return a;
}

Artifact copy_artifact(const Artifact& a) {
  Artifact c{a.target, a.graph, {}, a.shared_object, a.instruction_sets, a.varying, {}, a.gpu, a.kernel_info, a.vta};
  for (const auto& p : a.params) c.params.push_back(copy_of(p));
  for (const auto& b : a.smaller) {
    ArtifactBucket d{b.size, b.graph, b.shared_object, b.shared, {}, b.gpu};
    for (const auto& p : b.own) d.own.push_back(copy_of(p));
    c.smaller.push_back(std::move(d));
  }
  return c;
}

}  // namespace tessera::runtime
