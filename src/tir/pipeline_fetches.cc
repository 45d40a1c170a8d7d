#include "tir/pipeline_fetches.h"

#include <optional>
#include <set>

#include "tir/simplify.h"
#include "tir/stmt_functor.h"

namespace tessera::tir {

namespace {

int barriers_in(const Stmt& s) {
  int n = 0;
  visit_stmts(s, [&](const Stmt& x) { n += x->kind == StmtKind::Barrier; });
  return n;
}

// A fetch as tir/stage_fetches.h leaves it: a local buffer, filled by the
// loads, then copied to shared memory by the stores.
struct StagedFetch {
  const AllocateNode* registers = nullptr;
  Stmt loads, stores;
};

std::optional<StagedFetch> staged_fetch(const Stmt& s) {
  const auto* a = as<AllocateNode>(s);
  if (!a || a->scope != MemoryScope::Local) return std::nullopt;
  const auto* seq = as<SeqNode>(a->body);
  if (!seq || seq->stmts.size() != 2) return std::nullopt;
  const std::set<const ir::TensorNode*> loaded = buffers_written(seq->stmts[0]);
  if (loaded.size() != 1 || !loaded.count(a->buffer.get())) return std::nullopt;
  return StagedFetch{a, seq->stmts[0], seq->stmts[1]};
}

// Loop `n` (its body already pipelined inside) with its staged fetches
// loaded an iteration ahead; nothing when its body is not of that form.
std::optional<Stmt> pipelined(const ForNode& n, const Stmt& body) {
  if (n.extent < 2) return std::nullopt;
  // The shared buffers the fetches fill, allocated around the step.
  std::vector<const AllocateNode*> allocations;
  Stmt inner = body;
  while (const auto* a = as<AllocateNode>(inner)) {
    allocations.push_back(a);
    inner = a->body;
  }
  const auto* seq = as<SeqNode>(inner);
  if (!seq || seq->stmts.size() < 4 || seq->stmts.back()->kind != StmtKind::Barrier) return std::nullopt;
  const std::vector<Stmt>& stmts = seq->stmts;
  size_t first_barrier = 0;
  while (first_barrier < stmts.size() && stmts[first_barrier]->kind != StmtKind::Barrier) ++first_barrier;
  if (first_barrier == 0 || first_barrier + 2 >= stmts.size() || barriers_in(inner) != 2) return std::nullopt;

  const std::set<const ir::TensorNode*> written = buffers_written(body);
  std::vector<StagedFetch> ahead;
  std::vector<Stmt> fetches;
  for (size_t i = 0; i < first_barrier; ++i) {
    const std::optional<StagedFetch> f = staged_fetch(stmts[i]);
    bool independent = f.has_value();
    if (f)
      for (const ir::TensorNode* t : buffers_read(f->loads)) independent &= !written.count(t);
    if (independent) {
      ahead.push_back(*f);
      fetches.push_back(f->stores);
    } else {
      fetches.push_back(stmts[i]);
    }
  }
  if (ahead.empty()) return std::nullopt;

  auto loads_at = [&](const ir::Expr& step) {
    ir::VarMap at;
    at[n.var] = step;
    std::vector<Stmt> loads;
    for (const StagedFetch& f : ahead) loads.push_back(simplify(substitute_stmt(f.loads, at)));
    return make_seq(std::move(loads));
  };
  const ir::Expr next = n.var + ir::Expr(int64_t{1});
  std::vector<Stmt> step = fetches;
  step.push_back(stmts[first_barrier]);
  step.push_back(make_if(next < ir::Expr(n.extent), loads_at(next)));
  step.insert(step.end(), stmts.begin() + static_cast<std::ptrdiff_t>(first_barrier) + 1, stmts.end());
  Stmt loop_body = make_seq(std::move(step));
  for (auto it = allocations.rbegin(); it != allocations.rend(); ++it)
    loop_body = make_allocate((*it)->buffer, loop_body, (*it)->scope);
  Stmt out = make_seq({loads_at(ir::Expr(int64_t{0})), make_for(n.var, n.extent, ForKind::Serial, loop_body)});
  for (auto it = ahead.rbegin(); it != ahead.rend(); ++it)
    out = make_allocate(it->registers->buffer, out, MemoryScope::Local);
  return out;
}

class Pipeliner : public StmtMutator {
 protected:
  Stmt mutate_for(const ForNode* n, const Stmt& s) override {
    const Stmt body = mutate_stmt(n->body);
    if (n->for_kind != ForKind::Pipelined) return body == n->body ? s : make_for(n->var, n->extent, n->for_kind, body);
    if (std::optional<Stmt> p = pipelined(*n, body)) return *p;
    return make_for(n->var, n->extent, ForKind::Serial, body);
  }
};

}  // namespace

Stmt pipeline_fetches(const Stmt& s) { return Pipeliner().mutate_stmt(s); }

}  // namespace tessera::tir
