#pragma once
// A whole file's bytes, or tessera::Error "cannot open PATH: REASON".
#include <string>

namespace tessera::support {

std::string read_file(const std::string& path);

}  // namespace tessera::support
