#include "tir/arith.h"

#include <algorithm>

#include "ir/functor.h"
#include "ir/tensor.h"

namespace tessera::tir {

using ir::Expr;
using ir::ExprKind;

namespace {

int64_t sat_add(int64_t a, int64_t b) {
  if (a <= -Interval::kInf || b <= -Interval::kInf) return -Interval::kInf;
  if (a >= Interval::kInf || b >= Interval::kInf) return Interval::kInf;
  return std::clamp(a + b, -Interval::kInf, Interval::kInf);
}

int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  bool neg = (a < 0) != (b < 0);
  if (std::abs(a) >= Interval::kInf || std::abs(b) >= Interval::kInf) return neg ? -Interval::kInf : Interval::kInf;
  __int128 p = static_cast<__int128>(a) * b;
  if (p >= Interval::kInf) return Interval::kInf;
  if (p <= -Interval::kInf) return -Interval::kInf;
  return static_cast<int64_t>(p);
}

}  // namespace

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Interval bound_of(const Expr& e, const RangeMap& ranges) {
  if (!e || e.dtype() != ir::DType::Int64) return Interval::everything();
  int64_t c;
  if (ir::is_const_int(e, &c)) return Interval::point(c);
  if (e.as<ir::VarNode>()) {
    auto it = ranges.find(ir::Var(std::static_pointer_cast<const ir::VarNode>(e.ptr())));
    return it == ranges.end() ? Interval::everything() : it->second;
  }
  if (auto* b = e.as<ir::BinaryNode>()) {
    Interval x = bound_of(b->a, ranges), y = bound_of(b->b, ranges);
    switch (e.kind()) {
      case ExprKind::Add: return {sat_add(x.min, y.min), sat_add(x.max, y.max)};
      case ExprKind::Sub: return {sat_add(x.min, -y.max), sat_add(x.max, -y.min)};
      case ExprKind::Mul: {
        int64_t p[] = {sat_mul(x.min, y.min), sat_mul(x.min, y.max), sat_mul(x.max, y.min), sat_mul(x.max, y.max)};
        return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
      }
      case ExprKind::FloorDiv:
      case ExprKind::Div:
        if (y.min == y.max && y.min > 0 && (e.kind() == ExprKind::FloorDiv || x.min >= 0)) {
          int64_t lo = x.min <= -Interval::kInf ? -Interval::kInf : floor_div(x.min, y.min);
          int64_t hi = x.max >= Interval::kInf ? Interval::kInf : floor_div(x.max, y.min);
          return {lo, hi};
        }
        return Interval::everything();
      case ExprKind::FloorMod:
      case ExprKind::Mod:
        if (y.min == y.max && y.min > 0 && (e.kind() == ExprKind::FloorMod || x.min >= 0)) {
          if (x.min >= 0 && x.max < y.min) return x;
          return {0, y.min - 1};
        }
        return Interval::everything();
      case ExprKind::Min: return {std::min(x.min, y.min), std::min(x.max, y.max)};
      case ExprKind::Max: return {std::max(x.min, y.min), std::max(x.max, y.max)};
      default: return Interval::everything();
    }
  }
  if (auto* s = e.as<ir::SelectNode>()) {
    Interval x = bound_of(s->true_value, ranges), y = bound_of(s->false_value, ranges);
    return {std::min(x.min, y.min), std::max(x.max, y.max)};
  }
  return Interval::everything();
}

int64_t LinearForm::coefficient_of(const Expr& atom) const {
  for (const auto& [a, c] : terms)
    if (ir::structural_equal(a, atom)) return c;
  return 0;
}

void LinearForm::add(const Expr& atom, int64_t coef) {
  if (coef == 0) return;
  for (auto it = terms.begin(); it != terms.end(); ++it) {
    if (ir::structural_equal(it->first, atom)) {
      it->second += coef;
      if (it->second == 0) terms.erase(it);
      return;
    }
  }
  terms.emplace_back(atom, coef);
}

Expr LinearForm::to_expr() const {
  Expr out;
  for (const auto& [atom, coef] : terms) {
    if (!out) {
      out = coef == 1 ? atom : (coef == -1 ? ir::make_int(0) - atom : atom * ir::make_int(coef));
    } else if (coef > 0) {
      out = out + (coef == 1 ? atom : atom * ir::make_int(coef));
    } else {
      out = out - (coef == -1 ? atom : atom * ir::make_int(-coef));
    }
  }
  if (!out) return ir::make_int(constant);
  if (constant > 0) return out + ir::make_int(constant);
  if (constant < 0) return out - ir::make_int(-constant);
  return out;
}

namespace {
void accumulate(LinearForm& f, const Expr& e, int64_t scale) {
  int64_t c;
  if (ir::is_const_int(e, &c)) {
    f.constant += scale * c;
    return;
  }
  if (auto* b = e.as<ir::BinaryNode>()) {
    switch (e.kind()) {
      case ExprKind::Add:
        accumulate(f, b->a, scale);
        accumulate(f, b->b, scale);
        return;
      case ExprKind::Sub:
        accumulate(f, b->a, scale);
        accumulate(f, b->b, -scale);
        return;
      case ExprKind::Mul:
        if (ir::is_const_int(b->b, &c)) return accumulate(f, b->a, scale * c);
        if (ir::is_const_int(b->a, &c)) return accumulate(f, b->b, scale * c);
        break;
      default: break;
    }
  }
  f.add(e, scale);
}
}  // namespace

LinearForm linear_form(const Expr& e) {
  LinearForm f;
  accumulate(f, e, 1);
  return f;
}

}  // namespace tessera::tir
