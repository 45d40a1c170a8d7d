#pragma once
// What turning a loop into vector code needs to know: how the element a load or
// store touches moves with the loop variable (stride 0: one element for every
// lane, 1: contiguous lanes, anything else: a gather or scatter), and whether
// the loop's iterations may run as lanes side by side.
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/expr.h"
#include "tir/stmt.h"

namespace tessera::codegen {

// c when e == c * var + (terms free of var) for a constant c; nullopt when e
// is not affine in var with a constant coefficient (var * n, var / 4, ...).
std::optional<int64_t> stride_along(const ir::Expr& e, const ir::VarNode* var);

// The stride along var of the row-major offset of `indices` into `shape`.
std::optional<int64_t> access_stride(const std::vector<ir::Expr>& indices, const std::vector<int64_t>& shape,
                                     const ir::VarNode* var);

// The same along the variable of a loop of `lanes` iterations from 0 (a
// vector's lanes), which also sees through a floordiv or floormod by a
// constant that `lanes` divides, of an operand contiguous along it whose
// value at the first lane `lanes` divides: the lanes then share a quotient
// (stride 0) and run consecutive remainders (stride 1); and through one by
// any constant of an operand the lanes share (stride 0). A loop fused and
// split into vectors indexes its buffers so.
std::optional<int64_t> lane_stride(const ir::Expr& e, const ir::Var& var, int64_t lanes);
// e at the first lane (var = 0), simplified.
ir::Expr at_first_lane(const ir::Expr& e, const ir::Var& var);
std::optional<int64_t> lane_access_stride(const std::vector<ir::Expr>& indices, const std::vector<int64_t>& shape,
                                          const ir::Var& var, int64_t lanes);

// True when the condition `cond` holds for all `lanes` lanes of `var` (a
// loop from 0) or for none, wherever their first lane is a multiple of
// `lanes`: it reads no lane, or is a conjunction of such, or compares
// var + (a multiple of lanes) with 0 (e < 0, e >= 0; e <= 0 and e > 0 with
// the multiple off by one), or compares a value the lanes share (stride 0:
// an NHWC window's row, (k / C) / KW, for 8 channels k of a tap). A fetch
// of whole vectors checks its bound (fused index < extent, the extent a
// multiple of the lanes) so; the vector move then goes under the first
// lane's check.
bool lane_uniform(const ir::Expr& cond, const ir::Var& var, int64_t lanes);

// The largest power of two, up to 64, known to divide e wherever it is
// evaluated (a loop variable may be any integer: 1): from constants through
// +, -, *, min, max and modulo. What a vector access's alignment rests on.
int64_t known_alignment(const ir::Expr& e);
// The same for the row-major offset of `indices` into `shape`.
int64_t offset_alignment(const std::vector<ir::Expr>& indices, const std::vector<int64_t>& shape);

// True when the loop body is straight-line stores (guards allowed), every store
// moves with the loop variable (lanes write distinct elements), and a buffer the
// body writes is read only at the element the same lane writes (no lane sees
// another lane's result). Loops failing this run serially.
bool lanes_are_independent(const tir::ForNode& loop);

}  // namespace tessera::codegen
