#include "tir/stmt_functor.h"

namespace tessera::tir {

Stmt StmtMutator::mutate_stmt(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
    case StmtKind::For: return mutate_for(as<ForNode>(s), s);
    case StmtKind::Store: return mutate_store(as<StoreNode>(s), s);
    case StmtKind::Allocate: return mutate_allocate(as<AllocateNode>(s), s);
    case StmtKind::IfThenElse: return mutate_if(as<IfThenElseNode>(s), s);
    case StmtKind::Seq: return mutate_seq(as<SeqNode>(s), s);
    case StmtKind::Barrier: return s;
  }
  return s;
}

Stmt StmtMutator::mutate_for(const ForNode* n, const Stmt& s) {
  Stmt body = mutate_stmt(n->body);
  return body == n->body ? s : make_for(n->var, n->extent, n->for_kind, body);
}

Stmt StmtMutator::mutate_store(const StoreNode* n, const Stmt& s) {
  std::vector<ir::Expr> idx;
  bool changed = false;
  for (const auto& i : n->indices) {
    idx.push_back(mutate(i));
    changed |= !idx.back().same_as(i);
  }
  ir::Expr v = mutate(n->value);
  changed |= !v.same_as(n->value);
  return changed ? make_store(n->buffer, std::move(idx), v) : s;
}

Stmt StmtMutator::mutate_allocate(const AllocateNode* n, const Stmt& s) {
  Stmt body = mutate_stmt(n->body);
  return body == n->body ? s : make_allocate(n->buffer, body, n->scope);
}

Stmt StmtMutator::mutate_if(const IfThenElseNode* n, const Stmt& s) {
  ir::Expr c = mutate(n->cond);
  Stmt t = mutate_stmt(n->then_case), e = mutate_stmt(n->else_case);
  if (c.same_as(n->cond) && t == n->then_case && e == n->else_case) return s;
  return make_if(c, t, e);
}

Stmt StmtMutator::mutate_seq(const SeqNode* n, const Stmt& s) {
  std::vector<Stmt> out;
  bool changed = false;
  for (const auto& x : n->stmts) {
    out.push_back(mutate_stmt(x));
    changed |= out.back() != x;
  }
  return changed ? make_seq(std::move(out)) : s;
}

void visit_stmts(const Stmt& s, const std::function<void(const Stmt&)>& f,
                 const std::function<void(const ir::Expr&)>& fe) {
  if (!s) return;
  f(s);
  auto expr = [&](const ir::Expr& e) {
    if (fe) fe(e);
  };
  switch (s->kind) {
    case StmtKind::For: visit_stmts(as<ForNode>(s)->body, f, fe); break;
    case StmtKind::Store: {
      auto* n = as<StoreNode>(s);
      for (const auto& i : n->indices) expr(i);
      expr(n->value);
      break;
    }
    case StmtKind::Allocate: visit_stmts(as<AllocateNode>(s)->body, f, fe); break;
    case StmtKind::IfThenElse: {
      auto* n = as<IfThenElseNode>(s);
      expr(n->cond);
      visit_stmts(n->then_case, f, fe);
      visit_stmts(n->else_case, f, fe);
      break;
    }
    case StmtKind::Seq:
      for (const auto& x : as<SeqNode>(s)->stmts) visit_stmts(x, f, fe);
      break;
    case StmtKind::Barrier: break;
  }
}

std::set<const ir::TensorNode*> buffers_written(const Stmt& s) {
  std::set<const ir::TensorNode*> out;
  visit_stmts(s, [&](const Stmt& x) {
    if (const auto* store = as<StoreNode>(x)) out.insert(store->buffer.get());
  });
  return out;
}

std::set<const ir::TensorNode*> buffers_read(const Stmt& s) {
  std::set<const ir::TensorNode*> out;
  visit_stmts(
      s, [](const Stmt&) {},
      [&](const ir::Expr& e) {
        ir::post_order_visit(e, [&](const ir::Expr& x) {
          if (const auto* load = x.as<ir::TensorLoadNode>()) out.insert(load->tensor.get());
        });
      });
  return out;
}

Stmt substitute_stmt(const Stmt& s, const ir::VarMap& map) {
  struct Substituter : StmtMutator {
    const ir::VarMap* map;
    ir::Expr mutate(const ir::Expr& e) override { return ir::substitute(e, *map); }
  } substituter;
  substituter.map = &map;
  return substituter.mutate_stmt(s);
}

}  // namespace tessera::tir
