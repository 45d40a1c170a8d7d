#pragma once
// Visitor and mutator over statements, in the style of ir/functor.h.
#include <set>

#include "ir/functor.h"
#include "tir/stmt.h"

namespace tessera::tir {

class StmtMutator : public ir::ExprMutator {
 public:
  virtual Stmt mutate_stmt(const Stmt& s);

 protected:
  virtual Stmt mutate_for(const ForNode* n, const Stmt& s);
  virtual Stmt mutate_store(const StoreNode* n, const Stmt& s);
  virtual Stmt mutate_allocate(const AllocateNode* n, const Stmt& s);
  virtual Stmt mutate_if(const IfThenElseNode* n, const Stmt& s);
  virtual Stmt mutate_seq(const SeqNode* n, const Stmt& s);
};

// The buffers `s` stores into, and those its expressions load from.
std::set<const ir::TensorNode*> buffers_written(const Stmt& s);
std::set<const ir::TensorNode*> buffers_read(const Stmt& s);

// Replaces variables by expressions in every expression of s.
Stmt substitute_stmt(const Stmt& s, const ir::VarMap& map);

// Calls f on every statement (parents first) and fe on every expression root.
void visit_stmts(const Stmt& s, const std::function<void(const Stmt&)>& f,
                 const std::function<void(const ir::Expr&)>& fe = nullptr);

}  // namespace tessera::tir
