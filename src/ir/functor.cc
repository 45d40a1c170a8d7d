#include "ir/functor.h"

namespace tessera::ir {

void ExprVisitor::visit(const Expr& e) {
  if (!e) return;
  switch (e.kind()) {
    case ExprKind::Var: visit_var(e.as<VarNode>(), e); return;
    case ExprKind::TensorLoad: visit_load(e.as<TensorLoadNode>(), e); return;
    case ExprKind::Reduce: visit_reduce(e.as<ReduceNode>(), e); return;
    default: visit_children(e);
  }
}

void ExprVisitor::visit_load(const TensorLoadNode* n, const Expr&) {
  for (const auto& i : n->indices) visit(i);
}
void ExprVisitor::visit_reduce(const ReduceNode* n, const Expr&) { visit(n->source); }

void ExprVisitor::visit_children(const Expr& e) {
  if (is_binary(e.kind())) {
    auto* b = e.as<BinaryNode>();
    visit(b->a);
    visit(b->b);
  } else if (auto* n = e.as<NotNode>()) {
    visit(n->a);
  } else if (auto* s = e.as<SelectNode>()) {
    visit(s->cond);
    visit(s->true_value);
    visit(s->false_value);
  } else if (auto* c = e.as<CastNode>()) {
    visit(c->value);
  } else if (auto* c = e.as<CallNode>()) {
    for (const auto& a : c->args) visit(a);
  } else if (auto* l = e.as<TensorLoadNode>()) {
    for (const auto& i : l->indices) visit(i);
  } else if (auto* r = e.as<ReduceNode>()) {
    visit(r->source);
  }
}

Expr ExprMutator::mutate(const Expr& e) {
  if (!e) return e;
  switch (e.kind()) {
    case ExprKind::Var: return mutate_var(e.as<VarNode>(), e);
    case ExprKind::TensorLoad: return mutate_load(e.as<TensorLoadNode>(), e);
    case ExprKind::Reduce: return mutate_reduce(e.as<ReduceNode>(), e);
    default: return mutate_children(e);
  }
}

Expr ExprMutator::mutate_load(const TensorLoadNode* n, const Expr& e) { return mutate_children(e); }
Expr ExprMutator::mutate_reduce(const ReduceNode* n, const Expr& e) { return mutate_children(e); }

Expr ExprMutator::mutate_children(const Expr& e) {
  if (is_binary(e.kind())) {
    auto* b = e.as<BinaryNode>();
    Expr a = mutate(b->a), c = mutate(b->b);
    if (a.same_as(b->a) && c.same_as(b->b)) return e;
    return binary(e.kind(), a, c);
  }
  if (auto* n = e.as<NotNode>()) {
    Expr a = mutate(n->a);
    return a.same_as(n->a) ? e : logical_not(a);
  }
  if (auto* s = e.as<SelectNode>()) {
    Expr c = mutate(s->cond), t = mutate(s->true_value), f = mutate(s->false_value);
    if (c.same_as(s->cond) && t.same_as(s->true_value) && f.same_as(s->false_value)) return e;
    return select(c, t, f);
  }
  if (auto* c = e.as<CastNode>()) {
    Expr v = mutate(c->value);
    return v.same_as(c->value) ? e : cast(c->dtype, v);
  }
  if (auto* c = e.as<CallNode>()) {
    std::vector<Expr> args;
    bool changed = false;
    for (const auto& a : c->args) {
      args.push_back(mutate(a));
      changed |= !args.back().same_as(a);
    }
    return changed ? Expr(std::make_shared<const CallNode>(c->name, std::move(args))) : e;
  }
  if (auto* l = e.as<TensorLoadNode>()) {
    std::vector<Expr> idx;
    bool changed = false;
    for (const auto& i : l->indices) {
      idx.push_back(mutate(i));
      changed |= !idx.back().same_as(i);
    }
    return changed ? Expr(std::make_shared<const TensorLoadNode>(l->tensor, std::move(idx))) : e;
  }
  if (auto* r = e.as<ReduceNode>()) {
    Expr s = mutate(r->source);
    return s.same_as(r->source) ? e : Expr(std::make_shared<const ReduceNode>(r->combiner, s, r->axes));
  }
  return e;
}

namespace {
class Substituter : public ExprMutator {
 public:
  explicit Substituter(const VarMap& m) : map_(m) {}

 protected:
  Expr mutate_var(const VarNode*, const Expr& e) override {
    auto it = map_.find(Var(std::static_pointer_cast<const VarNode>(e.ptr())));
    return it == map_.end() ? e : it->second;
  }

 private:
  const VarMap& map_;
};

class PostOrder : public ExprVisitor {
 public:
  explicit PostOrder(const std::function<void(const Expr&)>& f) : f_(f) {}
  void visit(const Expr& e) override {
    if (!e) return;
    f_(e);
    visit_children(e);
  }

 private:
  const std::function<void(const Expr&)>& f_;
};
}  // namespace

Expr substitute(const Expr& e, const VarMap& map) {
  if (map.empty()) return e;
  return Substituter(map).mutate(e);
}

void post_order_visit(const Expr& e, const std::function<void(const Expr&)>& f) { PostOrder(f).visit(e); }

bool uses_var(const Expr& e, const Var& v) {
  bool found = false;
  post_order_visit(e, [&](const Expr& x) { found |= x.get() == v.get(); });
  return found;
}

bool contains_load(const Expr& e) {
  bool found = false;
  post_order_visit(e, [&](const Expr& x) { found = found || x.kind() == ExprKind::TensorLoad; });
  return found;
}

bool structural_equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a || !b || a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  switch (a.kind()) {
    case ExprKind::IntImm: return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
    case ExprKind::FloatImm: return a.as<FloatImmNode>()->value == b.as<FloatImmNode>()->value;
    case ExprKind::Var: return false;  // identity already checked
    default: break;
  }
  if (is_binary(a.kind())) {
    auto *x = a.as<BinaryNode>(), *y = b.as<BinaryNode>();
    return structural_equal(x->a, y->a) && structural_equal(x->b, y->b);
  }
  if (auto* x = a.as<NotNode>()) return structural_equal(x->a, b.as<NotNode>()->a);
  if (auto* x = a.as<SelectNode>()) {
    auto* y = b.as<SelectNode>();
    return structural_equal(x->cond, y->cond) && structural_equal(x->true_value, y->true_value) &&
           structural_equal(x->false_value, y->false_value);
  }
  if (auto* x = a.as<CastNode>()) return structural_equal(x->value, b.as<CastNode>()->value);
  auto same_list = [](const std::vector<Expr>& p, const std::vector<Expr>& q) {
    if (p.size() != q.size()) return false;
    for (size_t i = 0; i < p.size(); ++i)
      if (!structural_equal(p[i], q[i])) return false;
    return true;
  };
  if (auto* x = a.as<CallNode>()) {
    auto* y = b.as<CallNode>();
    return x->name == y->name && same_list(x->args, y->args);
  }
  if (auto* x = a.as<TensorLoadNode>()) {
    auto* y = b.as<TensorLoadNode>();
    return x->tensor == y->tensor && same_list(x->indices, y->indices);
  }
  return false;
}

}  // namespace tessera::ir
