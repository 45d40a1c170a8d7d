#include "tir/pad_tensor_core_rows.h"

#include <map>
#include <set>
#include <vector>

#include "tir/stmt_functor.h"

namespace tessera::tir {

namespace {

constexpr int64_t kSlotBytes = 16;

// Every access to a padded buffer moved onto its replacement (the same
// indices: only the row stride, taken from the shape, changes).
class ReplaceBuffers : public StmtMutator {
 public:
  explicit ReplaceBuffers(const std::map<const ir::TensorNode*, ir::Tensor>& by) : by_(by) {}

 protected:
  ir::Expr mutate_load(const ir::TensorLoadNode* n, const ir::Expr& e) override {
    const ir::Expr inner = ExprMutator::mutate_load(n, e);
    const auto* load = inner.as<ir::TensorLoadNode>();
    const auto it = by_.find(load->tensor.get());
    return it == by_.end() ? inner : ir::load(it->second, load->indices);
  }
  Stmt mutate_store(const StoreNode* n, const Stmt& s) override {
    const Stmt inner = StmtMutator::mutate_store(n, s);
    const auto* store = as<StoreNode>(inner);
    const auto it = by_.find(store->buffer.get());
    return it == by_.end() ? inner : make_store(it->second, store->indices, store->value);
  }
  Stmt mutate_allocate(const AllocateNode* n, const Stmt& s) override {
    const Stmt inner = StmtMutator::mutate_allocate(n, s);
    const auto* a = as<AllocateNode>(inner);
    const auto it = by_.find(a->buffer.get());
    return it == by_.end() ? inner : make_allocate(it->second, a->body, a->scope);
  }

 private:
  const std::map<const ir::TensorNode*, ir::Tensor>& by_;
};

}  // namespace

int64_t conflict_free_row(int64_t row_elements, int64_t element_bytes) {
  const int64_t bytes = row_elements * element_bytes;
  if (bytes % kSlotBytes != 0 || (bytes / kSlotBytes) % 2 != 0) return row_elements;
  return row_elements + kSlotBytes / element_bytes;
}

void pad_tensor_core_rows(DeviceKernel& kernel, int64_t max_shared_bytes) {
  // The kernel's shared buffers in the order it allocates them (an
  // unrolled loop repeats an allocation: one buffer), and those that
  // tensor-core loops touch.
  std::vector<ir::Tensor> shared;
  std::set<const ir::TensorNode*> seen, touched;
  visit_stmts(kernel.body, [&](const Stmt& s) {
    if (const auto* a = as<AllocateNode>(s);
        a && a->scope == MemoryScope::Shared && seen.insert(a->buffer.get()).second)
      shared.push_back(a->buffer);
    if (const auto* f = as<ForNode>(s); f && f->for_kind == ForKind::TensorCore) {
      for (const ir::TensorNode* b : buffers_read(s)) touched.insert(b);
      for (const ir::TensorNode* b : buffers_written(s)) touched.insert(b);
    }
  });
  std::map<const ir::TensorNode*, ir::Tensor> padded;
  int64_t bytes = kernel.shared_bytes;
  for (const ir::Tensor& b : shared) {
    if (!touched.count(b.get()) || b->shape.size() < 2) continue;
    const int64_t element = ir::size_in_bytes(b->dtype);
    std::vector<int64_t> shape = b->shape;
    shape.back() = conflict_free_row(shape.back(), element);
    const int64_t more = (shape.back() - b->shape.back()) * (b->num_elements() / b->shape.back()) * element;
    if (more == 0 || bytes + more > max_shared_bytes) continue;
    bytes += more;
    padded[b.get()] = ir::placeholder(shape, b->name, b->dtype);
  }
  if (padded.empty()) return;
  kernel.body = ReplaceBuffers(padded).mutate_stmt(kernel.body);
  kernel.shared_bytes = bytes;
}

}  // namespace tessera::tir
