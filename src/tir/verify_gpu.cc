#include "tir/verify_gpu.h"

#include <set>

#include "ir/functor.h"
#include "tessera/error.h"

namespace tessera::tir {

namespace {

class GpuVerifier {
 public:
  GpuVerifier(const DeviceKernel& k, const target::GpuLimits& limits) : kernel_(k), limits_(limits) {}

  void run() {
    const auto& b = kernel_.block;
    const auto& g = kernel_.grid;
    if (kernel_.threads_per_block() > limits_.max_threads_per_block)
      fail("a block of " + std::to_string(b[0]) + " x " + std::to_string(b[1]) + " x " + std::to_string(b[2]) +
           " = " + std::to_string(kernel_.threads_per_block()) + " threads; the target allows " +
           std::to_string(limits_.max_threads_per_block));
    if (b[0] > 1024 || b[1] > 1024 || b[2] > 64)
      fail("a block of " + std::to_string(b[0]) + " x " + std::to_string(b[1]) + " x " + std::to_string(b[2]) +
           " threads; no GPU has more than 1024 along x or y, 64 along z");
    if (g[0] > (int64_t{1} << 31) - 1 || g[1] > 65535 || g[2] > 65535)
      fail("a grid of " + std::to_string(g[0]) + " x " + std::to_string(g[1]) + " x " + std::to_string(g[2]) +
           " blocks; a GPU launches at most 2^31-1 along x, 65535 along y and z");
    if (kernel_.shared_bytes > limits_.max_shared_memory_per_block)
      fail(std::to_string(kernel_.shared_bytes) + " bytes of shared memory per block; the target allows " +
           std::to_string(limits_.max_shared_memory_per_block));
    check(kernel_.body);
    if (!bound_)
      fail("no loop is bound to blockIdx or threadIdx: one GPU thread would run it all (bind its loops)");
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw Error("GPU kernel " + kernel_.name + ": " + why); }

  bool uses_thread(const ir::Expr& e) const {
    bool uses = false;
    ir::post_order_visit(e, [&](const ir::Expr& x) {
      if (auto* v = x.as<ir::VarNode>()) uses |= thread_vars_.count(v) > 0;
    });
    return uses;
  }

  void check(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::For: {
        auto* n = as<ForNode>(s);
        if (n->for_kind == ForKind::Parallel)
          fail("loop '" + n->var.name() + "' is a CPU parallel loop (bind it to blockIdx or threadIdx)");
        if (is_block_axis(n->for_kind) && loops_ > block_loops_)
          fail("loop '" + n->var.name() + "' is bound to " + to_string(n->for_kind) +
               " inside another loop; blocks are the outermost loops of a kernel");
        // A virtual thread is a loop every thread runs alike: a condition
        // on it is the same in all of them.
        if (n->for_kind == ForKind::TensorCore) check_tensor_core(*n);
        // A tensor-core tile is its warp's lanes' (threadIdx.x) work: in a
        // block of one warp, what it writes is written once.
        const bool thread = is_thread_axis(n->for_kind) ||
                            (n->for_kind == ForKind::TensorCore && kernel_.block[0] == limits_.warp_size &&
                             kernel_.block[1] * kernel_.block[2] == 1);
        bound_ |= thread || is_block_axis(n->for_kind) || n->for_kind == ForKind::VThread;
        ++loops_;
        if (is_block_axis(n->for_kind)) ++block_loops_;
        if (thread) ++thread_depth_;
        if (thread) thread_vars_.insert(n->var.node());
        lane_loops_ += n->for_kind == ForKind::ThreadX;
        check(n->body);
        lane_loops_ -= n->for_kind == ForKind::ThreadX;
        if (thread) thread_vars_.erase(n->var.node());
        if (thread) --thread_depth_;
        if (is_block_axis(n->for_kind)) --block_loops_;
        --loops_;
        break;
      }
      case StmtKind::Store: {
        auto* n = as<StoreNode>(s);
        if (kernel_.threads_per_block() > 1 && thread_depth_ == 0 && !local_.count(n->buffer.get()))
          fail("'" + n->buffer->name + "' is written outside the threadIdx loops: every thread of a block would write it");
        break;
      }
      case StmtKind::Allocate: {
        auto* n = as<AllocateNode>(s);
        if (n->scope == MemoryScope::Global)
          fail("'" + n->buffer->name + "' is allocated in device memory inside the kernel");
        if (n->scope == MemoryScope::Local || n->scope == MemoryScope::Fragment) local_.insert(n->buffer.get());
        check(n->body);
        local_.erase(n->buffer.get());
        break;
      }
      case StmtKind::IfThenElse: {
        auto* n = as<IfThenElseNode>(s);
        const bool divergent = uses_thread(n->cond);
        divergent_ += divergent;
        check(n->then_case);
        check(n->else_case);
        divergent_ -= divergent;
        break;
      }
      case StmtKind::Seq:
        for (const auto& x : as<SeqNode>(s)->stmts) check(x);
        break;
      case StmtKind::Barrier:
        if (divergent_ > 0)
          fail("a barrier under a condition on the thread index: the threads that skip it would never meet the others");
        break;
    }
  }

  // A tensor-core tile is one instruction sequence of a whole warp: every
  // lane runs it with the same operands. A warp is 32 consecutive x indices
  // (x fastest), so the lanes differ only in threadIdx.x when the block's x
  // extent is a multiple of 32, and the tile must not depend on it.
  void check_tensor_core(const ForNode& n) const {
    const std::string tile = "tensor-core tile '" + n.var.name() + "'";
    if (limits_.arch < 80) fail(tile + ": sm_" + std::to_string(limits_.arch) + " has no mma.sync m16n8k16 (sm_80 and later)");
    if (kernel_.block[0] % 32 != 0)
      fail(tile + " in a block " + std::to_string(kernel_.block[0]) +
           " threads wide along x: a warp's lanes must be whole rows of 32 along x");
    if (lane_loops_ > 0) fail(tile + " inside a threadIdx.x loop: the lanes of a warp would compute different tiles");
    if (divergent_ > 0) fail(tile + " under a condition on the thread index: some lanes of a warp could skip it");
  }

  const DeviceKernel& kernel_;
  const target::GpuLimits& limits_;
  std::set<const ir::VarNode*> thread_vars_;
  std::set<const ir::TensorNode*> local_;
  int loops_ = 0, block_loops_ = 0, thread_depth_ = 0, divergent_ = 0, lane_loops_ = 0;
  bool bound_ = false;
};

}  // namespace

void verify_gpu(const DeviceProgram& program, const target::GpuLimits& limits) {
  for (const DeviceKernel& k : program.kernels) GpuVerifier(k, limits).run();
}

}  // namespace tessera::tir
