#pragma once
// A name or value from the user inside an error message: in quotes, at most
// 64 characters (a hostile file may hold megabyte names), control bytes shown
// as '?' so that the message stays one line.
#include <string>

namespace tessera::support {

inline std::string quoted(const std::string& text, size_t max = 64) {
  std::string s = "'";
  for (size_t i = 0; i < text.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    s += c < 0x20 || c == 0x7f ? '?' : text[i];
  }
  if (text.size() > max) s += "...";
  return s + "'";
}

}  // namespace tessera::support
