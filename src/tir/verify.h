#pragma once
// Checks a lowered kernel before code generation: no loads of unknown buffers,
// no parallel loop inside a vectorised one. Throws tessera::Error.
#include "tir/stmt.h"

namespace tessera::tir {

void verify(const LoweredFunc& f);

}  // namespace tessera::tir
