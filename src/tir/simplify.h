#pragma once
// Algebraic simplification: constant folding, linear-form canonicalisation of
// integer index arithmetic, and removal of guards proven true by loop ranges.
#include "tir/stmt.h"

namespace tessera::tir {

ir::Expr simplify(const ir::Expr& e);
Stmt simplify(const Stmt& s);

}  // namespace tessera::tir
