#pragma once
// Integer analysis used by simplification and bound inference: constant
// intervals of expressions under loop ranges, and linear forms
// (sum of coefficient * atom + constant) of index expressions.
#include <cstdint>
#include <limits>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/expr.h"

namespace tessera::tir {

struct Interval {
  static constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
  int64_t min = -kInf, max = kInf;
  bool bounded() const { return min > -kInf && max < kInf; }
  static Interval point(int64_t v) { return {v, v}; }
  static Interval everything() { return {}; }
};

using RangeMap = std::unordered_map<ir::Var, Interval, ir::VarHash, ir::VarEq>;

// a / b rounded towards negative infinity (b != 0).
int64_t floor_div(int64_t a, int64_t b);

// A constant interval holding every value of integer expression e when each
// variable lies in its range (variables without a range are unbounded).
Interval bound_of(const ir::Expr& e, const RangeMap& ranges);

// e = sum(terms[i].second * terms[i].first) + constant, where each atom is a
// variable or a non-linear sub-expression (floordiv, floormod, a product...).
struct LinearForm {
  std::vector<std::pair<ir::Expr, int64_t>> terms;
  int64_t constant = 0;

  int64_t coefficient_of(const ir::Expr& atom) const;
  void add(const ir::Expr& atom, int64_t coef);
  ir::Expr to_expr() const;
};

LinearForm linear_form(const ir::Expr& e);

}  // namespace tessera::tir
