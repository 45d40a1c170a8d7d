#pragma once
// The loop-nest IR that lowering produces and code generators consume.
// Expressions are ir::Expr; a TensorLoad in tir reads the buffer of its tensor
// (a function argument or an Allocate), indexed row-major by the tensor's shape.
#include <memory>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace tessera::tir {

// The GPU kinds are loops bound to the launch grid: one iteration per block
// (or thread of a block) along x, y or z; a VThread loop runs inside each
// thread, serially, as several virtual threads would.
// A TensorCore loop is the rows of a 16 x 16 tile that a warp computes
// together: with the loops inside it, either a product C += A * B over 16
// reduce steps into a Fragment buffer, C's tile set to zero, or C's tile
// stored elsewhere (codegen/gpu_source.h writes each as tensor-core
// instructions on CUDA). Its meaning is that of serial loops run by every
// thread of the warp alike: so other code generators run it.
// A Pipelined loop runs serially; on a GPU its body's fetches into shared
// memory, before its first barrier, are loaded one iteration ahead, while
// the rest of the body computes (tir/pipeline_fetches.h).
// A DotProduct loop (4 iterations) holds a Vectorized loop whose lanes each
// add the products of 4 unsigned bytes and 4 signed bytes into a 32-bit
// accumulator: the LLVM emitter writes the target's byte dot-product
// instruction (codegen/byte_dot_product.h); it means, and elsewhere runs as,
// a serial loop.
enum class ForKind {
  Serial, Parallel, Vectorized, Unrolled, TensorCore, DotProduct, Pipelined,
  BlockX, BlockY, BlockZ, ThreadX, ThreadY, ThreadZ, VThread,
};
// "serial", ..., "tensor_core", "dot_product", "pipelined", "blockIdx.x", "threadIdx.z", "vthread"
std::string to_string(ForKind k);
bool is_block_axis(ForKind k);
bool is_thread_axis(ForKind k);  // threadIdx.x|y|z (not vthread)
int grid_dimension(ForKind k);   // 0, 1, 2 for x, y, z of a block or thread axis

// Where a buffer lives on a GPU: Global (device memory: arguments and root
// stages' scratch), Shared (one per block), Local (one per thread),
// Fragment (a warp's 16 x 16 accumulator tiles, written and read only by
// TensorCore loops; on CUDA each thread holds its share of every tile; in
// meaning, and elsewhere, a Local buffer). CPU code reads every scope as a
// scratch buffer.
enum class MemoryScope { Global, Shared, Local, Fragment };
std::string to_string(MemoryScope s);

enum class StmtKind { For, Store, Allocate, IfThenElse, Seq, Barrier };

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
  AllocateNode(ir::Tensor b, Stmt s, MemoryScope sc = MemoryScope::Global)
      : StmtNode(StmtKind::Allocate), buffer(std::move(b)), body(std::move(s)), scope(sc) {}
  const ir::Tensor buffer;
  const Stmt body;
  const MemoryScope scope;
};

// Every thread of a block waits here until all have arrived, and what they
// wrote to shared memory before it is visible to all after it.
struct BarrierNode : StmtNode {
  BarrierNode() : StmtNode(StmtKind::Barrier) {}
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
Stmt make_allocate(ir::Tensor buffer, Stmt body, MemoryScope scope = MemoryScope::Global);
Stmt make_barrier();
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
