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

// A fetch step's body: thread loops and bounds around one store, or
// around a vectorized loop of one store (a copy of a few consecutive
// elements a lane).
struct FetchStep {
  std::vector<const ForNode*> threads;  // outermost first
  std::vector<ir::Expr> bounds;         // the ifs' conditions, outermost first
  const ForNode* lanes = nullptr;       // the vectorized loop, if any
  const StoreNode* store = nullptr;
};

std::optional<FetchStep> fetch_step(const Stmt& body) {
  FetchStep f;
  for (Stmt s = body;;) {
    if (const auto* loop = as<ForNode>(s); loop && is_thread_axis(loop->for_kind) && f.bounds.empty()) {
      f.threads.push_back(loop);
      s = loop->body;
    } else if (const auto* guard = as<IfThenElseNode>(s); guard && !guard->else_case && !f.lanes) {
      f.bounds.push_back(guard->cond);
      s = guard->then_case;
    } else if (const auto* lanes = as<ForNode>(s); lanes && lanes->for_kind == ForKind::Vectorized && !f.lanes) {
      f.lanes = lanes;
      s = lanes->body;
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
  FetchStager(std::set<const ir::TensorNode*> shared, int64_t max_registers)
      : shared_(std::move(shared)), max_registers_(max_registers) {}

 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    // In a pipelined loop's body (not in a loop inside it) a fetch of one
    // step, its thread loops alone, is staged too: its loads are then the
    // next step's.
    if (directly_pipelined_ && is_thread_axis(n->for_kind))
      if (const std::optional<FetchStep> f = fetch_step(s); f && stageable(*f)) return staged(nullptr, *f);
    const bool was_pipelined = pipelined_, was_direct = directly_pipelined_;
    pipelined_ |= n->for_kind == ForKind::Pipelined;
    directly_pipelined_ = n->for_kind == ForKind::Pipelined;
    Stmt out = stage(n, s);
    pipelined_ = was_pipelined;
    directly_pipelined_ = was_direct;
    return out;
  }

 private:
  Stmt stage(const ForNode* n, const Stmt& s) {
    const std::optional<FetchStep> f =
        n->for_kind == ForKind::Serial && n->extent > 1 ? fetch_step(n->body) : std::nullopt;
    if (!f || !stageable(*f) || n->extent * (f->lanes ? f->lanes->extent : 1) > max_registers_)
      return StmtMutator::mutate_for(n, s);
    // A vector copy only where pipelined: elsewhere ptxas already issues a
    // fetch's 16-byte loads together, before their stores.
    if (f->lanes && !pipelined_) return s;
    return staged(n, *f);
  }

  bool stageable(const FetchStep& f) const {
    return !f.threads.empty() && shared_.count(f.store->buffer.get()) && f.store->value.dtype() == ir::DType::Float32 &&
           ir::contains_load(f.store->value) &&
           !reads(f.store->value, f.store->buffer);  // its loads would then depend on its stores
  }

  // The fetch staged: its loads (every step's element, or vector of
  // `lanes` elements, to registers), then its stores. A scalar load is
  // zero where a bound fails (one predicate); a vector stays under its
  // bound, which holds for whole vectors, so that it is one move. `step`:
  // the fetch's step loop, or none for a fetch of one step.
  Stmt staged(const ForNode* step, const FetchStep& f) {
    const int64_t steps = step ? step->extent : 1, lanes = f.lanes ? f.lanes->extent : 1;
    const ir::Tensor registers =
        ir::placeholder({steps * lanes}, f.store->buffer->name + ".staged", f.store->buffer->dtype);
    ir::VarMap fresh;  // the stores' loops have their own variables
    auto fresh_var = [&](const ir::Var& v) {
      const ir::Var copy(v.name());
      fresh[v] = copy;
      return copy;
    };
    std::vector<ir::Var> threads, store_threads;
    for (const ForNode* t : f.threads) {
      threads.push_back(t->var);
      store_threads.push_back(fresh_var(t->var));
    }
    const std::optional<ir::Var> store_step = step ? std::optional(fresh_var(step->var)) : std::nullopt;
    const std::optional<ir::Var> store_lane = f.lanes ? std::optional(fresh_var(f.lanes->var)) : std::nullopt;
    // The register of the element (step, lane) in the loads' variables.
    ir::Expr slot = step ? ir::Expr(step->var) : ir::Expr(int64_t{0});
    if (f.lanes) slot = slot * ir::Expr(lanes) + ir::Expr(f.lanes->var);
    // The step and thread loops around `inner`.
    auto nest = [&](Stmt inner, const std::vector<ir::Var>& thread_vars, const std::optional<ir::Var>& step_var) {
      for (size_t i = f.threads.size(); i-- > 0;)
        inner = make_for(thread_vars[i], f.threads[i]->extent, f.threads[i]->for_kind, inner);
      return step ? make_for(*step_var, steps, ForKind::Unrolled, inner) : inner;
    };
    auto under_bounds = [&](Stmt inner, const ir::VarMap& vars) {
      for (size_t i = f.bounds.size(); i-- > 0;) inner = make_if(ir::substitute(f.bounds[i], vars), inner);
      return inner;
    };
    Stmt load;
    if (f.lanes) {
      load = under_bounds(
          make_for(f.lanes->var, lanes, ForKind::Vectorized, make_store(registers, {slot}, f.store->value)), {});
    } else {
      ir::Expr value = f.store->value;
      if (!f.bounds.empty()) {
        ir::Expr all = f.bounds.front();
        for (size_t i = 1; i < f.bounds.size(); ++i) all = all && f.bounds[i];
        value = ir::select(all, value, ir::make_float(0.0));
      }
      load = make_store(registers, {slot}, value);
    }
    Stmt store = substitute_stmt(make_store(f.store->buffer, f.store->indices, ir::load(registers, {slot})), fresh);
    if (f.lanes) store = make_for(*store_lane, lanes, ForKind::Vectorized, store);
    store = under_bounds(store, fresh);
    const std::optional<ir::Var> load_step = step ? std::optional(step->var) : std::nullopt;
    return make_allocate(registers,
                         make_seq({nest(load, threads, load_step), nest(store, store_threads, store_step)}),
                         MemoryScope::Local);
  }

  std::set<const ir::TensorNode*> shared_;
  int64_t max_registers_;  // a thread's staged registers, at most
  bool pipelined_ = false;           // inside a Pipelined loop
  bool directly_pipelined_ = false;  // ... and in no other loop inside it
};

}  // namespace

Stmt stage_fetches(const Stmt& s, int64_t max_registers) {
  std::set<const ir::TensorNode*> shared;
  visit_stmts(s, [&](const Stmt& x) {
    if (const auto* a = as<AllocateNode>(x); a && a->scope == MemoryScope::Shared) shared.insert(a->buffer.get());
  });
  return FetchStager(std::move(shared), max_registers).mutate_stmt(s);
}

}  // namespace tessera::tir
