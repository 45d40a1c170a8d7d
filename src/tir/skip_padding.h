#pragma once
// Skips sums over padding. A reduction that reads an inlined pad stage adds
// `select(inside, x, 0) * w`, which is zero wherever `inside` fails. Each part
// of `inside` that depends on a serial or parallel loop (and on nothing inside
// it) becomes a guard just inside that loop, so the border taps of a
// convolution (18% of the work of a 3x3 layer on a 7x7 image) are never
// computed. Only sums are rewritten: adding zero changes nothing, while
// max(acc, 0) would.
#include "tir/stmt.h"

namespace tessera::tir {

Stmt skip_padding(const Stmt& s);

}  // namespace tessera::tir
