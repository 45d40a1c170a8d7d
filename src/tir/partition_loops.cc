#include "tir/partition_loops.h"

#include <algorithm>

#include "ir/functor.h"
#include "tir/arith.h"
#include "tir/simplify.h"
#include "tir/stmt_functor.h"

namespace tessera::tir {

namespace {

using ir::Expr;
using ir::ExprKind;

// The range [lo, hi) of loop variables for which the guards seen hold.
struct TrueRange {
  int64_t lo, hi;
};

// Finds where the guards inside a loop body hold for every value of the loops
// nested between the loop and the guard.
class GuardCollector {
 public:
  GuardCollector(const ir::Var& var, int64_t extent) : var_(var), range_{0, extent} {}

  void visit(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::For: {
        const auto* n = as<ForNode>(s);
        if (n->extent <= 0) break;  // never runs
        inner_[n->var] = Interval{0, n->extent - 1};
        visit(n->body);
        inner_.erase(n->var);
        break;
      }
      case StmtKind::IfThenElse: {
        const auto* n = as<IfThenElseNode>(s);
        narrow_by(n->cond);
        visit(n->then_case);
        visit(n->else_case);
        break;
      }
      case StmtKind::Allocate: visit(as<AllocateNode>(s)->body); break;
      case StmtKind::Barrier: break;
      case StmtKind::Seq:
        for (const Stmt& x : as<SeqNode>(s)->stmts) visit(x);
        break;
      case StmtKind::Store:
        // A padded copy selects between data and zero: the same kind of guard.
        ir::post_order_visit(as<StoreNode>(s)->value, [&](const Expr& e) {
          if (const auto* sel = e.as<ir::SelectNode>()) narrow_by(sel->cond);
        });
        break;
    }
  }

  bool found() const { return found_; }
  TrueRange range() const { return range_; }

 private:
  void narrow_by(const Expr& cond) {
    if (cond.kind() == ExprKind::And) {
      const auto* b = cond.as<ir::BinaryNode>();
      narrow_by(b->a);
      narrow_by(b->b);
      return;
    }
    // Every comparison as `e < 0`.
    const auto* b = cond.as<ir::BinaryNode>();
    if (!b || b->a.dtype() != ir::DType::Int64) return;
    Expr e;
    switch (cond.kind()) {
      case ExprKind::LT: e = b->a - b->b; break;
      case ExprKind::LE: e = b->a - b->b - ir::make_int(1); break;
      case ExprKind::GT: e = b->b - b->a; break;
      case ExprKind::GE: e = b->b - b->a - ir::make_int(1); break;
      default: return;
    }
    LinearForm f = linear_form(e);
    const int64_t a = f.coefficient_of(var_);
    if (a == 0) return;
    f.add(var_, -a);
    const Expr rest = f.to_expr();
    if (ir::uses_var(rest, var_)) return;  // v also inside a non-linear part
    const Interval r = bound_of(rest, inner_);
    if (!r.bounded()) return;  // depends on loops outside this one
    // a*v + rest < 0 for every rest <= r.max.
    if (a > 0) {
      range_.hi = std::min(range_.hi, floor_div(-r.max - 1, a) + 1);
    } else {
      range_.lo = std::max(range_.lo, floor_div(r.max, -a) + 1);
    }
    found_ = true;
  }

  ir::Var var_;
  RangeMap inner_;
  TrueRange range_;
  bool found_ = false;
};

Stmt shifted(const ForNode* n, const Stmt& body, int64_t begin, int64_t end) {
  if (end <= begin) return nullptr;
  ir::VarMap m;
  if (end - begin == 1) {
    m[n->var] = ir::make_int(begin);
    return substitute_stmt(body, m);
  }
  if (begin == 0) return make_for(n->var, end, n->for_kind, body);
  ir::Var v(n->var.name());
  m[n->var] = Expr(v) + ir::make_int(begin);
  return make_for(v, end - begin, n->for_kind, substitute_stmt(body, m));
}

class Partitioner : public StmtMutator {
 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    if (n->for_kind != ForKind::Serial || n->extent <= 1 || copies_ * 3 > kMaxCopies)
      return StmtMutator::mutate_for(n, s);
    GuardCollector guards(n->var, n->extent);
    guards.visit(n->body);
    const TrueRange r = guards.range();
    if (!guards.found() || r.lo >= r.hi || (r.lo <= 0 && r.hi >= n->extent))
      return StmtMutator::mutate_for(n, s);
    // Each part simplified first (the steady state's guards are proven true
    // by its range; a border's often false), then partitioned further inside.
    std::vector<Stmt> parts = {shifted(n, n->body, 0, r.lo), shifted(n, n->body, r.lo, r.hi),
                               shifted(n, n->body, r.hi, n->extent)};
    copies_ *= 3;
    for (Stmt& p : parts) p = mutate_stmt(simplify(p));
    copies_ /= 3;
    return make_seq(std::move(parts));
  }

 private:
  // Each partition copies a body up to 3 times; nested ones multiply. Beyond
  // this many copies of any statement (a schedule of many non-dividing
  // splits) the remaining guards stay: slower code, never a code explosion.
  static constexpr int64_t kMaxCopies = 27;
  int64_t copies_ = 1;
};

}  // namespace

Stmt partition_loops(const Stmt& s) { return Partitioner().mutate_stmt(s); }

}  // namespace tessera::tir
