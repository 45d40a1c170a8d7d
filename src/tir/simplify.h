#pragma once
// Algebraic simplification: constant folding, linear-form canonicalisation of
// integer index arithmetic, and removal of guards proven true by loop ranges.
#include "tir/arith.h"
#include "tir/stmt.h"

namespace tessera::tir {

ir::Expr simplify(const ir::Expr& e);
// The same, knowing the ranges of some variables (loops around e).
ir::Expr simplify(const ir::Expr& e, const RangeMap& ranges);
Stmt simplify(const Stmt& s);

}  // namespace tessera::tir
