#include "tir/stage_fetches.h"

#include <optional>
#include <set>

#include "ir/functor.h"
#include "tir/stmt_functor.h"

namespace tessera::tir {

namespace {

bool reads(const ir::Expr& e, const ir::Tensor& buffer) {
  bool found = false;
  ir::post_order_visit(e, [&](const ir::Expr& x) {
    if (const auto* l = x.as<ir::TensorLoadNode>()) found |= l->tensor.get() == buffer.get();
  });
  return found;
}

// A fetch step's body: thread loops and bounds around one store.
struct FetchStep {
  std::vector<const ForNode*> threads;  // outermost first
  std::vector<ir::Expr> bounds;         // the ifs' conditions, outermost first
  const StoreNode* store = nullptr;
};

std::optional<FetchStep> fetch_step(const Stmt& body) {
  FetchStep f;
  for (Stmt s = body;;) {
    if (const auto* loop = as<ForNode>(s); loop && is_thread_axis(loop->for_kind) && f.bounds.empty()) {
      f.threads.push_back(loop);
      s = loop->body;
    } else if (const auto* guard = as<IfThenElseNode>(s); guard && !guard->else_case) {
      f.bounds.push_back(guard->cond);
      s = guard->then_case;
    } else if (const auto* store = as<StoreNode>(s)) {
      f.store = store;
      return f;
    } else {
      return std::nullopt;
    }
  }
}

class FetchStager : public StmtMutator {
 public:
  FetchStager(std::set<const ir::TensorNode*> shared, int64_t max_steps)
      : shared_(std::move(shared)), max_steps_(max_steps) {}

 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    const std::optional<FetchStep> f =
        n->for_kind == ForKind::Serial && n->extent > 1 && n->extent <= max_steps_ ? fetch_step(n->body) : std::nullopt;
    if (!f || f->threads.empty() || !shared_.count(f->store->buffer.get()) ||
        f->store->value.dtype() != ir::DType::Float32 || !ir::contains_load(f->store->value) ||
        reads(f->store->value, f->store->buffer))  // its loads then depend on its stores
      return StmtMutator::mutate_for(n, s);
    const ir::Tensor staged = ir::placeholder({n->extent}, f->store->buffer->name + ".staged", f->store->buffer->dtype);
    // The fetch's step and thread loops around `inner`, over `vars` (step first).
    auto nest = [&](Stmt inner, const std::vector<ir::Var>& vars) {
      for (size_t i = f->threads.size(); i-- > 0;)
        inner = make_for(vars[i + 1], f->threads[i]->extent, f->threads[i]->for_kind, inner);
      return make_for(vars[0], n->extent, ForKind::Unrolled, inner);
    };
    std::vector<ir::Var> vars = {n->var}, fresh_vars = {ir::Var(n->var.name())};
    ir::VarMap fresh;  // the stores' loops have their own variables
    fresh[n->var] = fresh_vars[0];
    for (const ForNode* t : f->threads) {
      vars.push_back(t->var);
      fresh_vars.emplace_back(t->var.name());
      fresh[t->var] = fresh_vars.back();
    }
    // Loads: each step's element to its register (zero where a bound fails).
    ir::Expr value = f->store->value;
    if (!f->bounds.empty()) {
      ir::Expr all = f->bounds.front();
      for (size_t i = 1; i < f->bounds.size(); ++i) all = all && f->bounds[i];
      value = ir::select(all, value, ir::make_float(0.0));
    }
    const Stmt loads = nest(make_store(staged, {n->var}, value), vars);
    // Stores: the registers to shared memory under the bound, as before.
    Stmt store = make_store(f->store->buffer, f->store->indices, ir::load(staged, {n->var}));
    for (size_t i = f->bounds.size(); i-- > 0;) store = make_if(f->bounds[i], store);
    const Stmt stores = nest(substitute_stmt(store, fresh), fresh_vars);
    return make_allocate(staged, make_seq({loads, stores}), MemoryScope::Local);
  }

 private:
  std::set<const ir::TensorNode*> shared_;
  int64_t max_steps_;
};

}  // namespace

Stmt stage_fetches(const Stmt& s, int64_t max_steps) {
  std::set<const ir::TensorNode*> shared;
  visit_stmts(s, [&](const Stmt& x) {
    if (const auto* a = as<AllocateNode>(x); a && a->scope == MemoryScope::Shared) shared.insert(a->buffer.get());
  });
  return FetchStager(std::move(shared), max_steps).mutate_stmt(s);
}

}  // namespace tessera::tir
