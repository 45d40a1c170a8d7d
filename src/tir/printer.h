#pragma once
// A readable, indented print of a lowered kernel (used by `--show` and TESSERA_LOG=lower).
#include <string>

#include "tir/stmt.h"

namespace tessera::tir {

std::string to_string(const Stmt& s, int indent = 0);
std::string to_string(const LoweredFunc& f);

}  // namespace tessera::tir
