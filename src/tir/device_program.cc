#include "tir/device_program.h"

#include <set>

#include "ir/functor.h"
#include "tessera/error.h"
#include "tir/stmt_functor.h"

namespace tessera::tir {

namespace {

// The extent every loop bound to one axis of a kernel has: the launch
// covers it exactly, so each index names one iteration.
void record_extent(const std::string& kernel, const ForNode* n, int64_t& launch, bool& seen) {
  if (!seen) {
    launch = n->extent;
    seen = true;
  } else if (launch != n->extent) {
    throw Error("kernel " + kernel + ": " + to_string(n->for_kind) + " is bound to loops of " +
                std::to_string(launch) + " and of " + std::to_string(n->extent) + " iterations ('" +
                n->var.name() + "'); every loop bound to one axis must have the same extent");
  }
}

DeviceKernel make_kernel(const std::string& name, const Stmt& nest, const std::vector<ir::Tensor>& globals) {
  DeviceKernel k;
  k.name = name;
  k.body = nest;
  std::array<bool, 3> grid_seen{}, block_seen{};
  std::set<const ir::TensorNode*> used, shared;
  visit_stmts(
      nest,
      [&](const Stmt& s) {
        if (auto* f = as<ForNode>(s)) {
          const int d = grid_dimension(f->for_kind);
          if (is_block_axis(f->for_kind)) record_extent(name, f, k.grid[d], grid_seen[d]);
          if (is_thread_axis(f->for_kind)) record_extent(name, f, k.block[d], block_seen[d]);
        } else if (auto* a = as<AllocateNode>(s)) {
          // An unrolled loop repeats its allocation: one buffer all the same.
          if (a->scope == MemoryScope::Shared && shared.insert(a->buffer.get()).second)
            k.shared_bytes += a->buffer->num_elements() * ir::size_in_bytes(a->buffer->dtype);
        } else if (auto* st = as<StoreNode>(s)) {
          used.insert(st->buffer.get());
        }
      },
      [&](const ir::Expr& e) {
        ir::post_order_visit(e, [&](const ir::Expr& x) {
          if (auto* l = x.as<ir::TensorLoadNode>()) used.insert(l->tensor.get());
        });
      });
  for (const ir::Tensor& t : globals)
    if (used.count(t.get())) k.params.push_back(t);
  return k;
}

}  // namespace

DeviceProgram split_device_kernels(const LoweredFunc& f) {
  DeviceProgram p;
  p.name = f.name;
  p.args = f.args;
  // Lowering wraps the root nests in the allocations of root stages' buffers.
  Stmt body = f.body;
  while (auto* a = as<AllocateNode>(body)) {
    if (a->scope != MemoryScope::Global) break;
    p.workspace.push_back(a->buffer);
    body = a->body;
  }
  std::vector<ir::Tensor> globals = p.args;
  globals.insert(globals.end(), p.workspace.begin(), p.workspace.end());
  std::vector<Stmt> nests;
  if (auto* seq = as<SeqNode>(body)) nests = seq->stmts;
  else if (body) nests.push_back(body);
  for (size_t i = 0; i < nests.size(); ++i)
    p.kernels.push_back(make_kernel(f.name + "_kernel" + std::to_string(i), nests[i], globals));
  return p;
}

}  // namespace tessera::tir
