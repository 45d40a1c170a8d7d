#include "tir/stmt.h"

namespace tessera::tir {

std::string to_string(ForKind k) {
  switch (k) {
    case ForKind::Serial: return "serial";
    case ForKind::Parallel: return "parallel";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Unrolled: return "unrolled";
    case ForKind::TensorCore: return "tensor_core";
    case ForKind::DotProduct: return "dot_product";
    case ForKind::Pipelined: return "pipelined";
    case ForKind::BlockX: return "blockIdx.x";
    case ForKind::BlockY: return "blockIdx.y";
    case ForKind::BlockZ: return "blockIdx.z";
    case ForKind::ThreadX: return "threadIdx.x";
    case ForKind::ThreadY: return "threadIdx.y";
    case ForKind::ThreadZ: return "threadIdx.z";
    case ForKind::VThread: return "vthread";
  }
  return "?";
}

bool is_block_axis(ForKind k) { return k == ForKind::BlockX || k == ForKind::BlockY || k == ForKind::BlockZ; }
bool is_thread_axis(ForKind k) { return k == ForKind::ThreadX || k == ForKind::ThreadY || k == ForKind::ThreadZ; }
int grid_dimension(ForKind k) {
  switch (k) {
    case ForKind::BlockY: case ForKind::ThreadY: return 1;
    case ForKind::BlockZ: case ForKind::ThreadZ: return 2;
    default: return 0;
  }
}

std::string to_string(MemoryScope s) {
  switch (s) {
    case MemoryScope::Global: return "global";
    case MemoryScope::Shared: return "shared";
    case MemoryScope::Local: return "local";
    case MemoryScope::Fragment: return "fragment";
  }
  return "?";
}

Stmt make_for(ir::Var v, int64_t extent, ForKind k, Stmt body) {
  return std::make_shared<const ForNode>(std::move(v), extent, k, std::move(body));
}
Stmt make_store(ir::Tensor buffer, std::vector<ir::Expr> indices, ir::Expr value) {
  return std::make_shared<const StoreNode>(std::move(buffer), std::move(indices), std::move(value));
}
Stmt make_allocate(ir::Tensor buffer, Stmt body, MemoryScope scope) {
  return std::make_shared<const AllocateNode>(std::move(buffer), std::move(body), scope);
}
Stmt make_barrier() {
  static const Stmt barrier = std::make_shared<const BarrierNode>();
  return barrier;
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
