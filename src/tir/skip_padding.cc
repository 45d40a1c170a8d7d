#include "tir/skip_padding.h"

#include <optional>

#include "ir/functor.h"
#include "tir/simplify.h"
#include "tir/stmt_functor.h"

namespace tessera::tir {

using ir::Expr;
using ir::ExprKind;

namespace {

void split_conjuncts(const Expr& e, std::vector<Expr>& out) {
  if (e.kind() == ExprKind::And) {
    auto* b = e.as<ir::BinaryNode>();
    split_conjuncts(b->a, out);
    split_conjuncts(b->b, out);
  } else {
    out.push_back(e);
  }
}

bool is_float_zero(const Expr& e) {
  auto* f = e.as<ir::FloatImmNode>();
  return f && f->value == 0.0;
}

// The condition of a select(c, x, 0) that multiplies the whole of `e`, if any.
std::optional<Expr> zero_select_condition(const Expr& e) {
  if (auto* s = e.as<ir::SelectNode>(); s && is_float_zero(s->false_value)) return s->cond;
  if (e.kind() == ExprKind::Mul) {
    auto* m = e.as<ir::BinaryNode>();
    if (auto c = zero_select_condition(m->a)) return c;
    return zero_select_condition(m->b);
  }
  return std::nullopt;
}

// For `buf[i] = buf[i] + term` the conjuncts under which term can be non-zero.
std::optional<std::vector<Expr>> update_conjuncts(const StoreNode* store) {
  if (store->value.kind() != ExprKind::Add) return std::nullopt;
  auto* add = store->value.as<ir::BinaryNode>();
  auto* acc = add->a.as<ir::TensorLoadNode>();
  if (!acc || acc->tensor != store->buffer || acc->indices.size() != store->indices.size()) return std::nullopt;
  for (size_t i = 0; i < acc->indices.size(); ++i)
    if (!ir::structural_equal(acc->indices[i], store->indices[i])) return std::nullopt;
  auto cond = zero_select_condition(add->b);
  if (!cond) return std::nullopt;
  std::vector<Expr> parts;
  split_conjuncts(*cond, parts);
  return parts;
}

bool contains(const std::vector<Expr>& list, const Expr& e) {
  for (const auto& x : list)
    if (ir::structural_equal(x, e)) return true;
  return false;
}

// The conjuncts shared by every store in `s`, or nullopt when some statement
// is not such an update (then nothing may be skipped around it).
std::optional<std::vector<Expr>> common_conjuncts(const Stmt& s) {
  switch (s->kind) {
    case StmtKind::Store: return update_conjuncts(as<StoreNode>(s));
    case StmtKind::For: return common_conjuncts(as<ForNode>(s)->body);
    case StmtKind::IfThenElse: {
      auto* n = as<IfThenElseNode>(s);
      if (n->else_case) return std::nullopt;
      return common_conjuncts(n->then_case);
    }
    case StmtKind::Seq: {
      std::optional<std::vector<Expr>> common;
      for (const auto& x : as<SeqNode>(s)->stmts) {
        auto c = common_conjuncts(x);
        if (!c) return std::nullopt;
        if (!common) {
          common = c;
        } else {
          std::vector<Expr> both;
          for (const auto& e : *common)
            if (contains(*c, e)) both.push_back(e);
          common = both;
        }
      }
      return common;
    }
    case StmtKind::Allocate:
    case StmtKind::Barrier: return std::nullopt;
  }
  return std::nullopt;
}

std::vector<ir::Var> loop_vars_inside(const Stmt& s) {
  std::vector<ir::Var> vars;
  visit_stmts(s, [&](const Stmt& x) {
    if (auto* f = as<ForNode>(x)) vars.push_back(f->var);
  });
  return vars;
}

class PaddingSkipper : public StmtMutator {
 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    Stmt body = mutate_stmt(n->body);
    if (n->for_kind == ForKind::Serial || n->for_kind == ForKind::Parallel) {
      if (auto common = common_conjuncts(body)) {
        std::vector<ir::Var> inner = loop_vars_inside(body);
        std::vector<Expr> hoisted;
        for (const auto& c : *common) {
          bool uses_inner = false;
          for (const auto& v : inner) uses_inner |= ir::uses_var(c, v);
          if (ir::uses_var(c, n->var) && !uses_inner) hoisted.push_back(c);
        }
        if (!hoisted.empty()) {
          Expr cond = hoisted[0];
          for (size_t i = 1; i < hoisted.size(); ++i) cond = cond && hoisted[i];
          body = make_if(cond, body);
        }
      }
    }
    return body == n->body ? s : make_for(n->var, n->extent, n->for_kind, body);
  }
};

}  // namespace

Stmt skip_padding(const Stmt& s) { return PaddingSkipper().mutate_stmt(s); }

}  // namespace tessera::tir
