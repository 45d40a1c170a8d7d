#pragma once
// Loop partitioning: a register tile that does not divide its axis (3 columns
// of a 56-wide row) leaves guards like `if (ow.0*3 + ow < 56)` on every
// multiply-add of the tile, and a padded copy selects between data and zero
// on every element. A serial loop whose body holds such guards (or selects) is cut
// into the range where every guard is true for all values of the loops inside
// it (the steady state, guard-free once simplified) and the ranges before and
// after it (the tail, guards kept). Only guards linear in the loop variable
// and in variables of loops nested inside it are used; the rest stay as they
// are.
#include "tir/stmt.h"

namespace tessera::tir {

Stmt partition_loops(const Stmt& s);

}  // namespace tessera::tir
