#include "tir/simplify.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "ir/functor.h"
#include "tir/arith.h"
#include "tir/stmt_functor.h"

namespace tessera::tir {

using ir::Expr;
using ir::ExprKind;

namespace {

bool const_bool(const Expr& e, bool* value) {
  if (auto* c = e.as<ir::CastNode>(); c && e.dtype() == ir::DType::Bool) {
    int64_t v;
    if (ir::is_const_int(c->value, &v)) {
      *value = v != 0;
      return true;
    }
  }
  return false;
}

bool const_float(const Expr& e, double* value) {
  if (auto* f = e.as<ir::FloatImmNode>()) {
    *value = f->value;
    return true;
  }
  return false;
}

class Simplifier : public StmtMutator {
 public:
  Simplifier() = default;
  explicit Simplifier(RangeMap ranges) : ranges_(std::move(ranges)) {}

  Expr mutate(const Expr& e) override {
    if (!e) return e;
    // The digits of a fused loop recombine before simplifying each apart
    // (x mod 32 of x = 64 a + b is b mod 32, no longer x's remainder).
    if (e.dtype() == ir::DType::Int64 && (e.kind() == ExprKind::Add || e.kind() == ExprKind::Sub)) {
      bool merged = false;
      const LinearForm recombined = merge_quotients_and_remainders(linear_form(e), &merged);
      if (merged) return mutate(recombined.to_expr());
    }
    Expr m = ir::ExprMutator::mutate(e);
    return rewrite(m);
  }

 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    if (n->extent == 1) {
      ir::VarMap zero;
      zero[n->var] = ir::make_int(0);
      return mutate_stmt(substitute_stmt(n->body, zero));
    }
    ranges_[n->var] = Interval{0, n->extent - 1};
    Stmt body = mutate_stmt(n->body);
    ranges_.erase(n->var);
    if (!body) return nullptr;
    return body == n->body ? s : make_for(n->var, n->extent, n->for_kind, body);
  }

  Stmt mutate_allocate(const AllocateNode* n, const Stmt& s) override {
    Stmt body = mutate_stmt(n->body);
    if (!body) return nullptr;
    return body == n->body ? s : make_allocate(n->buffer, body, n->scope);
  }

  // buf[i] = buf[i] (a sum that only added zero) does nothing.
  Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
    Stmt out = StmtMutator::mutate_store(n, s);
    auto* st = as<StoreNode>(out);
    auto* load = st->value.as<ir::TensorLoadNode>();
    if (load && load->tensor == st->buffer && load->indices.size() == st->indices.size()) {
      bool same = true;
      for (size_t i = 0; i < st->indices.size(); ++i) same &= ir::structural_equal(load->indices[i], st->indices[i]);
      if (same) return nullptr;
    }
    return out;
  }

  Stmt mutate_if(const IfThenElseNode* n, const Stmt& s) override {
    Expr c = mutate(n->cond);
    bool v;
    if (const_bool(c, &v)) return v ? mutate_stmt(n->then_case) : mutate_stmt(n->else_case);
    Stmt t = mutate_stmt(n->then_case), e = mutate_stmt(n->else_case);
    if (!t && !e) return nullptr;
    if (c.same_as(n->cond) && t == n->then_case && e == n->else_case) return s;
    if (!t) return make_if(ir::logical_not(c), e);
    return make_if(c, t, e);
  }

 private:
  // x / c and x mod c as atoms of a linear form when c is a positive constant.
  static bool div_mod_of(const Expr& atom, ExprKind kind, Expr* x, int64_t* c) {
    if (atom.kind() != kind) return false;
    const auto* b = atom.as<ir::BinaryNode>();
    if (!ir::is_const_int(b->b, c) || *c <= 0) return false;
    *x = b->a;
    return true;
  }

  // Whether `d` is floor(x / b): written so, or as floor(y / (a * b)) where
  // x is floor(y / a).
  static bool is_quotient(const Expr& d, const Expr& x, int64_t b) {
    Expr dx, y;
    int64_t dc = 0, a = 0;
    if (!div_mod_of(d, ExprKind::FloorDiv, &dx, &dc)) return false;
    if (dc == b && ir::structural_equal(dx, x)) return true;
    return div_mod_of(x, ExprKind::FloorDiv, &y, &a) && dc == a * b && ir::structural_equal(dx, y);
  }

  // floor(x / b) * b * k + (x mod b) * k is x * k: the digits of a fused
  // loop's position put back together (an index n * OH * OW + y * OW + x of
  // the loops fused from n, y, x is their fused loop's variable again).
  // `*any` tells whether a pair merged (each merge leaves one quotient and
  // one remainder fewer, so repeating ends).
  static LinearForm merge_quotients_and_remainders(LinearForm f, bool* any = nullptr) {
    for (bool merged = true; merged;) {
      merged = false;
      for (size_t m = 0; m < f.terms.size() && !merged; ++m) {
        Expr x;
        int64_t b = 0;
        if (!div_mod_of(f.terms[m].first, ExprKind::FloorMod, &x, &b)) continue;
        const int64_t k = f.terms[m].second;
        // (floor(y / a) mod b) * a * k + (y mod a) * k is (y mod (a * b)) * k:
        // the lower digits alone, where the highest is dropped (an extent-1
        // batch indexed 0).
        Expr y, ry;
        int64_t a = 0, ra = 0;
        if (div_mod_of(x, ExprKind::FloorDiv, &y, &a) && k % a == 0)
          for (size_t r = 0; r < f.terms.size() && !merged; ++r) {
            if (r == m || f.terms[r].second != k / a || !div_mod_of(f.terms[r].first, ExprKind::FloorMod, &ry, &ra) ||
                ra != a || !ir::structural_equal(ry, y))
              continue;
            LinearForm out;
            out.constant = f.constant;
            for (size_t t = 0; t < f.terms.size(); ++t)
              if (t != m && t != r) out.add(f.terms[t].first, f.terms[t].second);
            out.add(ir::floormod(y, ir::make_int(a * b)), k / a);
            f = std::move(out);
            merged = true;
            if (any) *any = true;
          }
        if (merged) break;
        for (size_t d = 0; d < f.terms.size() && !merged; ++d) {
          if (d == m || f.terms[d].second != k * b || !is_quotient(f.terms[d].first, x, b)) continue;
          LinearForm out;
          out.constant = f.constant;
          for (size_t t = 0; t < f.terms.size(); ++t)
            if (t != m && t != d) out.add(f.terms[t].first, f.terms[t].second);
          const LinearForm whole = linear_form(x);
          for (const auto& [atom, coef] : whole.terms) out.add(atom, coef * k);
          out.constant += whole.constant * k;
          f = std::move(out);
          merged = true;
          if (any) *any = true;
        }
      }
    }
    return f;
  }

  Expr rewrite(const Expr& e) {
    if (e.dtype() == ir::DType::Int64 && (e.kind() == ExprKind::Add || e.kind() == ExprKind::Sub || e.kind() == ExprKind::Mul))
      return merge_quotients_and_remainders(linear_form(e)).to_expr();
    auto* b = e.as<ir::BinaryNode>();
    if (b && b->a.dtype() == ir::DType::Int64) return rewrite_int(e, b);
    if (b && b->a.dtype() == ir::DType::Float32) return rewrite_float(e, b);
    if (b && (e.kind() == ExprKind::And || e.kind() == ExprKind::Or)) {
      bool x, y;
      bool cx = const_bool(b->a, &x), cy = const_bool(b->b, &y);
      if (e.kind() == ExprKind::And) {
        if ((cx && !x) || (cy && !y)) return ir::make_bool(false);
        if (cx) return b->b;
        if (cy) return b->a;
      } else {
        if ((cx && x) || (cy && y)) return ir::make_bool(true);
        if (cx) return b->b;
        if (cy) return b->a;
      }
      return e;
    }
    if (auto* n = e.as<ir::NotNode>()) {
      bool x;
      if (const_bool(n->a, &x)) return ir::make_bool(!x);
      return e;
    }
    if (auto* s = e.as<ir::SelectNode>()) {
      bool x;
      if (const_bool(s->cond, &x)) return x ? s->true_value : s->false_value;
      return e;
    }
    if (auto* c = e.as<ir::CastNode>()) {
      int64_t i;
      double f;
      if (c->dtype == ir::DType::Float32 && ir::is_const_int(c->value, &i)) return ir::make_float(static_cast<double>(i));
      if (c->dtype == ir::DType::Int64 && const_float(c->value, &f)) return ir::make_int(static_cast<int64_t>(f));
      return e;
    }
    return e;
  }

  Expr rewrite_int(const Expr& e, const ir::BinaryNode* b) {
    int64_t x, y;
    bool cx = ir::is_const_int(b->a, &x), cy = ir::is_const_int(b->b, &y);
    Interval ia = bound_of(b->a, ranges_), ib = bound_of(b->b, ranges_);
    switch (e.kind()) {
      case ExprKind::Div:
      case ExprKind::Mod:
        // Truncation equals flooring for non-negative operands.
        if (ia.min >= 0 && cy && y > 0)
          return rewrite_int_floor(e.kind() == ExprKind::Div ? ExprKind::FloorDiv : ExprKind::FloorMod, b->a, y);
        if (cx && cy && y != 0) return ir::make_int(e.kind() == ExprKind::Div ? x / y : x % y);
        return e;
      case ExprKind::FloorDiv:
      case ExprKind::FloorMod:
        if (cy && y > 0) return rewrite_int_floor(e.kind(), b->a, y);
        return e;
      case ExprKind::Min:
        if (ia.max <= ib.min) return b->a;
        if (ib.max <= ia.min) return b->b;
        return e;
      case ExprKind::Max:
        if (ia.min >= ib.max) return b->a;
        if (ib.min >= ia.max) return b->b;
        return e;
      default: break;
    }
    if (ir::is_comparison(e.kind())) {
      Interval d = bound_of(linear_form(b->a - b->b).to_expr(), ranges_);
      auto decide = [&](bool known_true, bool known_false) -> Expr {
        if (known_true) return ir::make_bool(true);
        if (known_false) return ir::make_bool(false);
        return e;
      };
      switch (e.kind()) {
        case ExprKind::LT: return decide(d.max < 0, d.min >= 0);
        case ExprKind::LE: return decide(d.max <= 0, d.min > 0);
        case ExprKind::GT: return decide(d.min > 0, d.max <= 0);
        case ExprKind::GE: return decide(d.min >= 0, d.max < 0);
        case ExprKind::EQ: return decide(d.min == 0 && d.max == 0, d.min > 0 || d.max < 0);
        case ExprKind::NE: return decide(d.min > 0 || d.max < 0, d.min == 0 && d.max == 0);
        default: break;
      }
    }
    return e;
  }

  // floor(a / c) and a mod c for a constant c > 0: the multiples of c in a's
  // linear form leave the division exactly.
  Expr rewrite_int_floor(ExprKind kind, const Expr& a, int64_t c) {
    if (c == 1) return kind == ExprKind::FloorDiv ? a : ir::make_int(0);
    // floor(floor(x / d) / c) = floor(x / (d*c)) for positive d and c: one
    // quotient, which recombines with x's remainders (floor(x / dc)*dc + x mod dc = x).
    int64_t divisor = 0;
    if (const auto* inner = a.as<ir::BinaryNode>(); kind == ExprKind::FloorDiv && inner &&
        inner->kind == ExprKind::FloorDiv && ir::is_const_int(inner->b, &divisor) && divisor > 0 &&
        divisor <= (int64_t{1} << 31) / c)
      return rewrite_int_floor(kind, inner->a, divisor * c);
    LinearForm f = linear_form(a), quotient, rest;
    for (const auto& [atom, coef] : f.terms) {
      if (coef % c == 0) quotient.add(atom, coef / c);
      else rest.add(atom, coef);
    }
    int64_t k = f.constant;
    int64_t kq = floor_div(k, c);
    quotient.constant = kq;
    rest.constant = k - kq * c;
    Expr r = rest.to_expr();
    Interval ir_ = bound_of(r, ranges_);
    bool r_fits = ir_.min >= 0 && ir_.max < c;
    if (kind == ExprKind::FloorMod) {
      if (r_fits) return r;
      if (std::optional<Expr> m = floor_of_aligned(kind, rest, c)) return *m;
      return ir::floormod(r, ir::make_int(c));
    }
    if (r_fits) return quotient.to_expr();
    Expr q = quotient.to_expr();
    Expr d = floor_of_aligned(kind, rest, c).value_or(ir::floordiv(r, ir::make_int(c)));
    if (ir::is_const_int(q, int64_t{0})) return d;
    return linear_form(q + d).to_expr();
  }

  // floor(a / c) and a mod c where a = g*A + r, g a divisor of c and
  // 0 <= r < g: floor(A / (c/g)) and (A mod (c/g))*g + r. A tile's offset
  // plus a position within the tile, divided by a multiple of the tile:
  // (k0*32 + j) / 64 with 0 <= j < 32 is k0 / 2, (k0*32 + j) mod 64 is
  // (k0 mod 2)*32 + j. (An implicit GEMM's reduction in (tap, channel)
  // order then reads a step's channels at offsets linear in j.) Nothing
  // where no divisor g of c splits a that way.
  std::optional<Expr> floor_of_aligned(ExprKind kind, const LinearForm& a, int64_t c) {
    std::vector<int64_t> divisors;  // the candidates g: common divisors of c and a coefficient, largest first
    for (const auto& [atom, coef] : a.terms)
      if (int64_t g = std::gcd(coef, c); g > 1 && g < c) divisors.push_back(g);
    std::sort(divisors.rbegin(), divisors.rend());
    for (int64_t g : divisors) {
      LinearForm aligned, small;
      for (const auto& [atom, coef] : a.terms) {
        if (coef % g == 0) aligned.add(atom, coef / g);
        else small.add(atom, coef);
      }
      aligned.constant = floor_div(a.constant, g);
      small.constant = a.constant - aligned.constant * g;
      const Expr r = small.to_expr();
      const Interval bound = bound_of(r, ranges_);
      if (bound.min < 0 || bound.max >= g) continue;
      const Expr outer = rewrite_int_floor(kind, aligned.to_expr(), c / g);
      return kind == ExprKind::FloorDiv ? outer : linear_form(outer * g + r).to_expr();
    }
    return std::nullopt;
  }

  Expr rewrite_float(const Expr& e, const ir::BinaryNode* b) {
    double x, y;
    bool cx = const_float(b->a, &x), cy = const_float(b->b, &y);
    if (cx && cy) {
      switch (e.kind()) {
        case ExprKind::Add: return ir::make_float(x + y);
        case ExprKind::Sub: return ir::make_float(x - y);
        case ExprKind::Mul: return ir::make_float(x * y);
        case ExprKind::Div: return ir::make_float(x / y);
        case ExprKind::Min: return ir::make_float(std::min(x, y));
        case ExprKind::Max: return ir::make_float(std::max(x, y));
        default: return e;
      }
    }
    // A zero factor (a padding tap) makes the product zero; like TVM we do
    // not keep 0 * inf = nan alive for it.
    if (e.kind() == ExprKind::Mul && ((cy && y == 0.0) || (cx && x == 0.0))) return ir::make_float(0.0);
    if (e.kind() == ExprKind::Mul && cy && y == 1.0) return b->a;
    if (e.kind() == ExprKind::Mul && cx && x == 1.0) return b->b;
    if (e.kind() == ExprKind::Add && cy && y == 0.0) return b->a;
    if (e.kind() == ExprKind::Add && cx && x == 0.0) return b->b;
    return e;
  }

  RangeMap ranges_;
};

}  // namespace

Expr simplify(const Expr& e) { return Simplifier().mutate(e); }
Expr simplify(const Expr& e, const RangeMap& ranges) { return Simplifier(ranges).mutate(e); }
Stmt simplify(const Stmt& s) { return Simplifier().mutate_stmt(s); }

}  // namespace tessera::tir
