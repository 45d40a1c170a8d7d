#include "runtime/npy.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "support/checked_math.h"
#include "support/write_file.h"
#include "tessera/error.h"

namespace tessera::runtime {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMaxHeader = 1 << 16;

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order':
// False, 'shape': (2, 3), }. It is parsed as one, so that a key spelled
// inside another value (a crafted file) is not taken for the real one, and
// a key given twice, or one missing or unknown, is an error.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : text_(text), path_(path) {}

  NpyHeader parse() {
    NpyHeader h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    expect('{');
    while (!next_is('}')) {
      const std::string key = string_literal();
      expect(':');
      auto once = [&](bool& seen) {
        if (seen) fail("key '" + key + "' appears twice");
        seen = true;
      };
      if (key == "descr") {
        once(seen_descr);
        h.descr = string_literal();
      } else if (key == "fortran_order") {
        once(seen_order);
        h.fortran_order = boolean();
      } else if (key == "shape") {
        once(seen_shape);
        h.shape = tuple();
      } else {
        fail("unknown key '" + key.substr(0, 32) + "'");
      }
      if (!next_is('}')) expect(',');
    }
    expect('}');
    skip_space();
    if (pos_ != text_.size()) fail("text after the header's closing brace");
    if (!seen_descr) fail("no dtype ('descr')");
    if (!seen_shape) fail("no shape");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& why) { throw Error("'" + path_ + "': the .npy header: " + why); }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) ++pos_;
  }
  bool next_is(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  void expect(char c) {
    if (!next_is(c)) fail(std::string("expected '") + c + "' at byte " + std::to_string(pos_));
    ++pos_;
  }
  std::string string_literal() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      fail("expected a quoted string at byte " + std::to_string(pos_));
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == std::string::npos) fail("an unterminated string");
    std::string value = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return value;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}})
      if (text_.compare(pos_, std::strlen(word), word) == 0) {
        pos_ += std::strlen(word);
        return value;
      }
    fail("expected True or False at byte " + std::to_string(pos_));
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> shape;
    expect('(');
    while (!next_is(')')) {
      const size_t start = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      if (pos_ == start || pos_ - start > 12) fail("shape entry at byte " + std::to_string(start) + " is not a size");
      shape.push_back(std::stoll(text_.substr(start, pos_ - start)));
      if (!next_is(')')) expect(',');
    }
    expect(')');
    return shape;
  }

  const std::string& text_;
  const std::string& path_;
  size_t pos_ = 0;
};

// The element types read_npy takes: float32 as is, integers converted.
struct ElementType {
  const char* descr;
  uint64_t bytes;
  bool is_integer;
  int64_t (*read)(const char*);
};

template <typename T>
int64_t read_as_int(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return static_cast<int64_t>(v);
}

constexpr int64_t kExactInFloat = int64_t{1} << 24;

const ElementType* element_type(const std::string& descr) {
  static const ElementType kTypes[] = {
      {"<f4", 4, false, nullptr},           {"float32", 4, false, nullptr},       {"<i8", 8, true, read_as_int<int64_t>},
      {"int64", 8, true, read_as_int<int64_t>}, {"<i4", 4, true, read_as_int<int32_t>}, {"int32", 4, true, read_as_int<int32_t>},
      {"|u1", 1, true, read_as_int<uint8_t>}, {"|b1", 1, true, read_as_int<uint8_t>}, {"|i1", 1, true, read_as_int<int8_t>},
  };
  for (const ElementType& t : kTypes)
    if (descr == t.descr) return &t;
  return nullptr;
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

  const NpyHeader h = HeaderParser(header, path).parse();
  const ElementType* element = element_type(h.descr);
  if (!element)
    throw Error("'" + path + "': dtype " + h.descr.substr(0, 16) +
                ", Tessera reads float32 ('<f4') and integers ('<i8', '<i4', '|u1', '|b1')");
  if (h.fortran_order)
    throw Error("'" + path + "': Fortran-ordered arrays are not supported (save with np.ascontiguousarray)");
  std::vector<int64_t> shape = h.shape;
  if (shape.empty()) shape = {1};  // a scalar
  const int64_t elements = support::bounded_product(shape, "'" + path + "' shape");
  // The data's size is checked against the file before anything is allocated:
  // a small file claiming a huge shape costs nothing.
  const auto data_start = static_cast<uint64_t>(in.tellg());
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(static_cast<std::streamoff>(data_start));
  const uint64_t needed = static_cast<uint64_t>(elements) * element->bytes;
  const uint64_t held = file_size - data_start;
  if (held < needed)
    throw Error("'" + path + "' is shorter than its shape needs: " + std::to_string(held) + " bytes of data for " +
                std::to_string(needed));
  if (held > needed)
    throw Error("'" + path + "' has " + std::to_string(held - needed) + " bytes after the data its shape holds");
  NDArray a(shape);
  if (element->bytes == sizeof(float) && !element->is_integer) {
    if (!in.read(reinterpret_cast<char*>(a.data()), static_cast<std::streamsize>(needed)))
      throw Error("cannot read '" + path + "'");
    return a;
  }
  std::string bytes(needed, '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(needed))) throw Error("cannot read '" + path + "'");
  for (int64_t i = 0; i < elements; ++i) {
    const int64_t v = element->read(bytes.data() + i * element->bytes);
    // Integers (token ids) compute as float32, which holds them exactly up to 2^24.
    if (v > kExactInFloat || v < -kExactInFloat)
      throw Error("'" + path + "': element " + std::to_string(i) + " is " + std::to_string(v) +
                  ", beyond the integers float32 holds exactly (|v| <= 2^24)");
    a.data()[i] = static_cast<float>(v);
  }
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
  std::string out(kMagic, 6);
  out.push_back(1);  // format version 1.0
  out.push_back(0);
  const uint16_t n = static_cast<uint16_t>(header.size());
  out.append(reinterpret_cast<const char*>(&n), 2);
  out += header;
  out.append(reinterpret_cast<const char*>(array.data()), static_cast<size_t>(array.size()) * sizeof(float));
  support::write_file_atomically(path, out);  // a full disk leaves the old file, not half a new one
}

}  // namespace tessera::runtime
