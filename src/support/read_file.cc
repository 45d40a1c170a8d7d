#include "support/read_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tessera/error.h"

namespace tessera::support {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace tessera::support
