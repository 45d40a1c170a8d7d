#include "runtime/npy.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "support/checked_math.h"
#include "tessera/error.h"

namespace tessera::runtime {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMaxHeader = 1 << 16;

std::vector<int64_t> parse_shape(const std::string& tuple, const std::string& path) {
  std::vector<int64_t> shape;
  std::stringstream s(tuple);
  std::string item;
  while (std::getline(s, item, ',')) {
    item.erase(0, item.find_first_not_of(" "));
    item.erase(item.find_last_not_of(" ") + 1);
    if (item.empty()) continue;
    if (item.size() > 12 || item.find_first_not_of("0123456789") != std::string::npos)
      throw Error("'" + path + "': shape entry '" + item.substr(0, 16) + "' is not a size");
    shape.push_back(std::stoll(item));
  }
  return shape;
}

}  // namespace

NDArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open '" + path + "'");
  char magic[6];
  uint8_t version[2];
  if (!in.read(magic, 6) || std::memcmp(magic, kMagic, 6) != 0)
    throw Error("'" + path + "' is not a .npy file (no \\x93NUMPY magic)");
  in.read(reinterpret_cast<char*>(version), 2);
  uint32_t header_length = 0;
  if (version[0] == 1) {
    uint16_t n = 0;
    in.read(reinterpret_cast<char*>(&n), 2);
    header_length = n;
  } else if (version[0] == 2 || version[0] == 3) {
    in.read(reinterpret_cast<char*>(&header_length), 4);
  } else {
    throw Error("'" + path + "': .npy format version " + std::to_string(version[0]) + " is not supported");
  }
  if (!in || header_length > kMaxHeader) throw Error("'" + path + "': damaged .npy header");
  std::string header(header_length, '\0');
  if (!in.read(header.data(), header_length)) throw Error("'" + path + "': the .npy header is truncated");

  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')")))
    throw Error("'" + path + "': the .npy header has no dtype");
  if (m[1] != "<f4" && m[1] != "float32")
    throw Error("'" + path + "': dtype " + std::string(m[1]).substr(0, 16) + ", Tessera reads float32 ('<f4')");
  if (std::regex_search(header, std::regex(R"('fortran_order'\s*:\s*True)")))
    throw Error("'" + path + "': Fortran-ordered arrays are not supported (save with np.ascontiguousarray)");
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))")))
    throw Error("'" + path + "': the .npy header has no shape");
  std::vector<int64_t> shape = parse_shape(m[1], path);
  if (shape.empty()) shape = {1};  // a scalar
  support::bounded_product(shape, "'" + path + "' shape");
  NDArray a(shape);
  if (!in.read(reinterpret_cast<char*>(a.data()), a.size() * sizeof(float)))
    throw Error("'" + path + "' is shorter than its shape needs");
  return a;
}

void write_npy(const NDArray& array, const std::string& path) {
  std::string shape;
  for (int64_t d : array.shape()) shape += std::to_string(d) + ", ";
  if (array.shape().size() > 1) shape.erase(shape.size() - 2);
  else if (!shape.empty()) shape.erase(shape.size() - 1);  // (n,) keeps its comma
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
  // Magic (6) + version (2) + length (2) + header + newline, padded to 64 bytes.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error("cannot write '" + path + "'");
  out.write(kMagic, 6);
  const char version[2] = {1, 0};
  out.write(version, 2);
  const uint16_t n = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&n), 2);
  out << header;
  out.write(reinterpret_cast<const char*>(array.data()), array.size() * sizeof(float));
  if (!out) throw Error("cannot write '" + path + "'");
}

}  // namespace tessera::runtime
