#pragma once
// Prints a lowered kernel as C-like source, for people (tessera op --show).
#include <string>

#include "tir/stmt.h"

namespace tessera::codegen {

std::string to_c(const tir::LoweredFunc& f);

}  // namespace tessera::codegen
