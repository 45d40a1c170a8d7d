#pragma once
// Prints expressions and tensors in the seeds' format, e.g.
//   Conv2dOutput(nn, yy, xx, ff) += (PaddedInput[nn, ((yy*2) + ry), ...]*placeholder[...])
#include <string>

#include "ir/tensor.h"

namespace tessera::ir {

std::string to_string(const Expr& e);
// The name of a binary operator printed in call style ("floordiv", "min"...), or null for infix ones.
const char* call_style_name(ExprKind k);
// One line: "name = PLACEHOLDER [1, 3]" or "name(i, j) += body".
std::string to_string(const Tensor& t);

}  // namespace tessera::ir
