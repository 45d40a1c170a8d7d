#include "tir/stmt.h"

namespace tessera::tir {

std::string to_string(ForKind k) {
  switch (k) {
    case ForKind::Serial: return "serial";
    case ForKind::Parallel: return "parallel";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Unrolled: return "unrolled";
  }
  return "?";
}

Stmt make_for(ir::Var v, int64_t extent, ForKind k, Stmt body) {
  return std::make_shared<const ForNode>(std::move(v), extent, k, std::move(body));
}
Stmt make_store(ir::Tensor buffer, std::vector<ir::Expr> indices, ir::Expr value) {
  return std::make_shared<const StoreNode>(std::move(buffer), std::move(indices), std::move(value));
}
Stmt make_allocate(ir::Tensor buffer, Stmt body) {
  return std::make_shared<const AllocateNode>(std::move(buffer), std::move(body));
}
Stmt make_if(ir::Expr cond, Stmt then_case, Stmt else_case) {
  return std::make_shared<const IfThenElseNode>(std::move(cond), std::move(then_case), std::move(else_case));
}
Stmt make_seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (auto& s : stmts) {
    if (!s) continue;
    if (auto* q = as<SeqNode>(s)) flat.insert(flat.end(), q->stmts.begin(), q->stmts.end());
    else flat.push_back(std::move(s));
  }
  if (flat.size() == 1) return flat[0];
  return std::make_shared<const SeqNode>(std::move(flat));
}

}  // namespace tessera::tir
