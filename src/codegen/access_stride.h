#pragma once
// How the element a load or store touches moves with one loop variable: the
// analysis behind vectorised memory access (stride 0: one element for every
// lane, 1: contiguous lanes, anything else: a gather or scatter).
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/expr.h"

namespace tessera::codegen {

// c when e == c * var + (terms free of var) for a constant c; nullopt when e
// is not affine in var with a constant coefficient (var * n, var / 4, ...).
std::optional<int64_t> stride_along(const ir::Expr& e, const ir::VarNode* var);

// The stride along var of the row-major offset of `indices` into `shape`.
std::optional<int64_t> access_stride(const std::vector<ir::Expr>& indices, const std::vector<int64_t>& shape,
                                     const ir::VarNode* var);

}  // namespace tessera::codegen
