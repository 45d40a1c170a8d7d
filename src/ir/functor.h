#pragma once
// Visitor and mutator over expressions: a pass overrides only the nodes it cares about.
#include <functional>
#include <unordered_map>

#include "ir/tensor.h"

namespace tessera::ir {

class ExprVisitor {
 public:
  virtual ~ExprVisitor() = default;
  virtual void visit(const Expr& e);

 protected:
  virtual void visit_var(const VarNode*, const Expr&) {}
  virtual void visit_load(const TensorLoadNode* n, const Expr& e);
  virtual void visit_reduce(const ReduceNode* n, const Expr& e);
  void visit_children(const Expr& e);
};

class ExprMutator {
 public:
  virtual ~ExprMutator() = default;
  virtual Expr mutate(const Expr& e);

 protected:
  virtual Expr mutate_var(const VarNode*, const Expr& e) { return e; }
  virtual Expr mutate_load(const TensorLoadNode* n, const Expr& e);
  virtual Expr mutate_reduce(const ReduceNode* n, const Expr& e);
  // Rebuilds e from mutated children; returns e itself when nothing changed.
  Expr mutate_children(const Expr& e);
};

using VarMap = std::unordered_map<Var, Expr, VarHash, VarEq>;

// Replaces variables by expressions.
Expr substitute(const Expr& e, const VarMap& map);
// Calls f on every node, parents before children.
void post_order_visit(const Expr& e, const std::function<void(const Expr&)>& f);
bool uses_var(const Expr& e, const Var& v);
// Whether e reads a tensor (holds a TensorLoad).
bool contains_load(const Expr& e);
// Structural equality (variables by identity).
bool structural_equal(const Expr& a, const Expr& b);

}  // namespace tessera::ir
