#pragma once
// Values that read memory more than once for one result: relu's
// `x < 0 ? 0 : x`, clip's nested selects, hard-swish's `x * relu6(x + 3)`,
// the NaN checks of maximum and minimum, each repeating x, which in a fused
// epilogue reads the product's tile, a bias and a residual. Written out as
// C, each repetition is a second read behind a ternary, and ptxas (CUDA 13,
// sm_90) kept the ternaries as branches around those reads (MobileNet-v2's
// relu6 epilogues in half at batch 16: a branch per output). Bound once
// to a variable, the reads happen once and the selects are data selects.
#include <string>
#include <utility>
#include <vector>

#include "ir/expr.h"

namespace tessera::codegen {

struct BoundReads {
  // Variables and the subexpressions they hold, in evaluation order (one
  // may use the variables before it).
  std::vector<std::pair<ir::Var, ir::Expr>> bindings;
  ir::Expr value;  // with each bound subexpression replaced by its variable
};

// Binds every subexpression of `value` that reads a tensor, occurs more than
// once (structurally), and is evaluated whichever way the selects and
// short-circuits in `value` go (at least one occurrence outside a select's
// branches and the right sides of && and ||): evaluating it before the rest
// then reads nothing the value would not have read. The largest such is
// bound first, then the largest repeat left (in the value and in what is
// bound); variables are named prefix0, prefix1, ... in that order. Nothing
// to bind: no bindings, `value` as given.
BoundReads bind_repeated_reads(const ir::Expr& value, const std::string& prefix);

}  // namespace tessera::codegen
