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

#include "support/bounded_json.h"
#include "support/quoted.h"
#include "support/write_file.h"
#include "tessera/error.h"

namespace tessera::runtime {
namespace {

constexpr char kMagic[8] = {'T', 'E', 'S', 'S', 'E', 'R', 'A', '\0'};
constexpr uint32_t kVersion = 2;
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

// Reads fields from the file's bytes; running past the end is a truncation.
class Reader {
 public:
  Reader(const std::string& bytes, const std::string& path) : bytes_(bytes), path_(path) {}

  template <class T>
  T get(const std::string& what) {
    T value;
    std::memcpy(&value, take(sizeof(T), what), sizeof(T));
    return value;
  }
  std::string get_bytes(uint64_t n, const std::string& what) { return std::string(take(n, what), n); }
  // The next n bytes in place (no copy: a model's weights are most of them).
  std::string_view view_bytes(uint64_t n, const std::string& what) { return std::string_view(take(n, what), n); }
  bool at_end() const { return pos_ == bytes_.size(); }

 private:
  const char* take(uint64_t n, const std::string& what) {
    if (n > bytes_.size() - pos_)
      throw Error("artifact '" + path_ + "' is truncated: " + what + " needs " + std::to_string(n) + " bytes at byte " +
                  std::to_string(pos_) + ", the file has " + std::to_string(bytes_.size()));
    const char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  const std::string& bytes_;
  const std::string& path_;
  size_t pos_ = 0;
};

// The file's bytes, once its first bytes show it is an artifact: a large
// file of something else is refused before it is read.
std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error("cannot open artifact '" + path + "'");
  const std::streamoff size = in.tellg();
  if (size < 0) throw Error("cannot read artifact '" + path + "': not a regular file");
  in.seekg(0);
  char magic[sizeof(kMagic)] = {};
  if (!in.read(magic, sizeof(magic)) || std::memcmp(magic, kMagic, sizeof(kMagic)) != 0)
    throw Error("'" + path + "' is not a Tessera artifact (it does not start with TESSERA)");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), size)) throw Error("cannot read artifact '" + path + "'");
  return bytes;
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
    out.append(reinterpret_cast<const char*>(a.params[i].data()), a.params[i].size() * sizeof(float));
  }
  return out;
}

std::vector<NDArray> params_from(std::string_view bytes, const ExecutableGraph& g, const std::string& path) {
  uint64_t expected = 0;
  for (int t : g.constants) expected += static_cast<uint64_t>(g.num_elements(t)) * sizeof(float);
  if (bytes.size() != expected)
    throw Error("artifact '" + path + "': params hold " + std::to_string(bytes.size()) + " bytes, the graph's " +
                std::to_string(g.constants.size()) + " constants need " + std::to_string(expected));
  std::vector<NDArray> params;
  size_t pos = 0;
  for (int t : g.constants) {
    NDArray a(g.tensors[t].shape);
    const size_t n = static_cast<size_t>(a.size()) * sizeof(float);
    std::memcpy(a.data(), bytes.data() + pos, n);
    pos += n;
    params.push_back(std::move(a));
  }
  return params;
}

}  // namespace

void write_artifact(const Artifact& artifact, const std::string& path) {
  artifact.graph.validate();
  std::string out(kMagic, sizeof(kMagic));
  put<uint32_t>(out, kVersion);
  put<uint32_t>(out, 5);
  put_section(out, "target", artifact.target);
  put_section(out, "instruction_sets", joined(artifact.instruction_sets));
  put_section(out, "graph", artifact.graph.to_json().dump());
  put_section(out, "params", params_bytes(artifact));
  put_section(out, "kernels", artifact.shared_object);

  support::write_file_atomically(path, out);
}

bool is_artifact_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof(kMagic)] = {};
  return in && in.read(magic, sizeof(magic)) && std::memcmp(magic, kMagic, sizeof(kMagic)) == 0;
}

Artifact read_artifact(const std::string& path) {
  const std::string bytes = read_file(path);
  Reader r(bytes, path);
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    throw Error("'" + path + "' is not a Tessera artifact (it does not start with TESSERA)");
  r.get_bytes(sizeof(kMagic), "the magic");
  const auto version = r.get<uint32_t>("the format version");
  if (version != kVersion)
    throw Error("artifact '" + path + "' has format version " + std::to_string(version) + "; this runtime reads " +
                std::to_string(kVersion) + " (recompile the model)");
  const auto count = r.get<uint32_t>("the section count");
  if (count > kMaxSections) throw Error("artifact '" + path + "' claims " + std::to_string(count) + " sections");
  // Views into `bytes`: the weights are copied once, into their arrays, and
  // the file's bytes freed on return (a copy per section made loading hold
  // three times the artifact).
  std::map<std::string, std::string_view> sections;
  for (uint32_t i = 0; i < count; ++i) {
    const auto name_length = r.get<uint32_t>("a section name's length");
    if (name_length > kMaxSectionName)
      throw Error("artifact '" + path + "': section " + std::to_string(i) + " has a name of " +
                  std::to_string(name_length) + " bytes");
    std::string name = r.get_bytes(name_length, "a section name");
    const auto size = r.get<uint64_t>("the size of section " + support::quoted(name));
    const auto crc = r.get<uint32_t>("the checksum of section " + support::quoted(name));
    const std::string_view section = r.view_bytes(size, "section " + support::quoted(name));
    if (crc_of(section) != crc)
      throw Error("artifact '" + path + "' is damaged: section " + support::quoted(name) +
                  " does not match its checksum (a changed byte; compile the model again)");
    sections[name] = section;
  }
  if (!r.at_end()) throw Error("artifact '" + path + "' has bytes after its last section");
  for (const char* required : {"target", "instruction_sets", "graph", "params", "kernels"})
    if (!sections.count(required)) throw Error("artifact '" + path + "' has no '" + std::string(required) + "' section");

  Artifact a;
  a.target = std::string(sections["target"]);
  a.instruction_sets = split(std::string(sections["instruction_sets"]));
  support::JsonLimits limits;
  limits.max_depth = 8;
  limits.max_elements = 1 << 20;
  limits.max_bytes = 256u << 20;
  nlohmann::json graph;
  try {
    graph = support::parse_bounded_json(std::string(sections["graph"]), limits);
  } catch (const Error& e) {
    throw Error("artifact '" + path + "': graph section: " + e.what());
  }
  a.graph = ExecutableGraph::from_json(graph, "artifact '" + path + "'");
  a.params = params_from(sections["params"], a.graph, path);
  a.shared_object = std::string(sections["kernels"]);
  return a;
}

}  // namespace tessera::runtime
