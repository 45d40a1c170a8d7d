#pragma once
// At most `limit` lines of a long text (a compiler's log), with how many
// were left out, so that an error message holding it stays readable.
#include <sstream>
#include <string>

namespace tessera::support {

inline std::string first_lines(const std::string& text, int limit) {
  std::istringstream in(text);
  std::string line, out;
  int count = 0;
  while (std::getline(in, line))
    if (count++ < limit) out += line + "\n";
  if (count > limit) out += "... (" + std::to_string(count - limit) + " more lines)\n";
  return out;
}

}  // namespace tessera::support
