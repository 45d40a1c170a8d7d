#pragma once
// Unrolls loops marked Unrolled in the IR itself (codegen would unroll them
// too), so that the simplifier sees each iteration with its constant index:
// bound checks of padding fold away, and a tap that only adds zero vanishes.
#include "tir/stmt.h"

namespace tessera::tir {

// Loops whose body would be copied more than `max_copies` times in all stay loops.
Stmt unroll_loops(const Stmt& s, int64_t max_copies = 256);

}  // namespace tessera::tir
