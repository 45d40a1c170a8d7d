#pragma once
// The loop-nest IR that lowering produces and code generators consume.
// Expressions are ir::Expr; a TensorLoad in tir reads the buffer of its tensor
// (a function argument or an Allocate), indexed row-major by the tensor's shape.
#include <memory>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace tessera::tir {

enum class ForKind { Serial, Parallel, Vectorized, Unrolled };
std::string to_string(ForKind k);

enum class StmtKind { For, Store, Allocate, IfThenElse, Seq };

struct StmtNode {
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
  const StmtKind kind;
};
using Stmt = std::shared_ptr<const StmtNode>;

// for (var = 0; var < extent; ++var) body
struct ForNode : StmtNode {
  ForNode(ir::Var v, int64_t e, ForKind k, Stmt b)
      : StmtNode(StmtKind::For), var(std::move(v)), extent(e), for_kind(k), body(std::move(b)) {}
  const ir::Var var;
  const int64_t extent;
  const ForKind for_kind;
  const Stmt body;
};

// buffer[indices] = value
struct StoreNode : StmtNode {
  StoreNode(ir::Tensor b, std::vector<ir::Expr> i, ir::Expr v)
      : StmtNode(StmtKind::Store), buffer(std::move(b)), indices(std::move(i)), value(std::move(v)) {}
  const ir::Tensor buffer;
  const std::vector<ir::Expr> indices;
  const ir::Expr value;
};

// A scratch buffer of buffer->shape, live inside body. Small ones go on the
// stack (and into registers once indices are constant); large ones on the heap.
struct AllocateNode : StmtNode {
  AllocateNode(ir::Tensor b, Stmt s) : StmtNode(StmtKind::Allocate), buffer(std::move(b)), body(std::move(s)) {}
  const ir::Tensor buffer;
  const Stmt body;
};

struct IfThenElseNode : StmtNode {
  IfThenElseNode(ir::Expr c, Stmt t, Stmt e)
      : StmtNode(StmtKind::IfThenElse), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  const ir::Expr cond;
  const Stmt then_case;
  const Stmt else_case;  // may be null
};

struct SeqNode : StmtNode {
  explicit SeqNode(std::vector<Stmt> s) : StmtNode(StmtKind::Seq), stmts(std::move(s)) {}
  const std::vector<Stmt> stmts;
};

Stmt make_for(ir::Var v, int64_t extent, ForKind k, Stmt body);
Stmt make_store(ir::Tensor buffer, std::vector<ir::Expr> indices, ir::Expr value);
Stmt make_allocate(ir::Tensor buffer, Stmt body);
Stmt make_if(ir::Expr cond, Stmt then_case, Stmt else_case = nullptr);
Stmt make_seq(std::vector<Stmt> stmts);  // flattens nested sequences, drops nulls

template <class T> const T* as(const Stmt& s) { return dynamic_cast<const T*>(s.get()); }

// A kernel: `args` are the buffers passed in (inputs, then outputs).
struct LoweredFunc {
  std::string name;
  std::vector<ir::Tensor> args;
  Stmt body;
};

}  // namespace tessera::tir
