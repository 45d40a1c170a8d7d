#include "codegen/repeated_reads.h"

#include <algorithm>

#include "ir/functor.h"
#include "ir/tensor.h"

namespace tessera::codegen {

namespace {

using ir::Expr;
using ir::ExprKind;

// Enough for the epilogues above (one or two operands each); a value with
// more repeated reads keeps the rest as written.
constexpr int kMostBindings = 8;

struct Occurrences {
  Expr expr;
  int count = 0;
  bool unconditional = false;  // some occurrence is evaluated however the value's choices go
  int64_t size = 0;            // nodes
};

int64_t node_count(const Expr& e) {
  int64_t n = 0;
  ir::post_order_visit(e, [&](const Expr&) { ++n; });
  return n;
}

// Every subexpression that reads a tensor and is not a truth value, each
// structurally distinct one once with how often it occurs. A select's
// branches and the right side of && and || are conditional.
void collect(const Expr& e, bool unconditional, std::vector<Occurrences>& seen) {
  if (e.dtype() != ir::DType::Bool && ir::contains_load(e)) {
    auto it =
        std::find_if(seen.begin(), seen.end(), [&](const Occurrences& o) { return ir::structural_equal(o.expr, e); });
    if (it == seen.end()) it = seen.insert(seen.end(), Occurrences{e, 0, false, node_count(e)});
    ++it->count;
    it->unconditional |= unconditional;
  }
  if (e.kind() == ExprKind::And || e.kind() == ExprKind::Or) {
    const auto* n = e.as<ir::BinaryNode>();
    collect(n->a, unconditional, seen);
    collect(n->b, false, seen);
  } else if (ir::is_binary(e.kind())) {
    const auto* n = e.as<ir::BinaryNode>();
    collect(n->a, unconditional, seen);
    collect(n->b, unconditional, seen);
  } else if (const auto* n = e.as<ir::NotNode>()) {
    collect(n->a, unconditional, seen);
  } else if (const auto* n = e.as<ir::SelectNode>()) {
    collect(n->cond, unconditional, seen);
    collect(n->true_value, false, seen);
    collect(n->false_value, false, seen);
  } else if (const auto* n = e.as<ir::CastNode>()) {
    collect(n->value, unconditional, seen);
  } else if (const auto* n = e.as<ir::CallNode>()) {
    for (const Expr& a : n->args) collect(a, unconditional, seen);
  } else if (const auto* n = e.as<ir::TensorLoadNode>()) {
    for (const Expr& i : n->indices) collect(i, unconditional, seen);
  }
}

class Replace : public ir::ExprMutator {
 public:
  Replace(Expr from, Expr to) : from_(std::move(from)), to_(std::move(to)) {}
  Expr mutate(const Expr& e) override { return ir::structural_equal(e, from_) ? to_ : ir::ExprMutator::mutate(e); }

 private:
  const Expr from_, to_;
};

}  // namespace

// Each round binds the largest repeat among the value and the bindings so
// far (a read may repeat inside a bound subexpression and beside it). A
// later binding never holds an earlier one's variable: the occurrences
// holding it were, before, as many occurrences of a larger subexpression,
// which would have been bound first. Earlier ones may hold later ones, so
// each new binding is evaluated first.
BoundReads bind_repeated_reads(const ir::Expr& value, const std::string& prefix) {
  BoundReads bound{{}, value};
  for (int i = 0; i < kMostBindings; ++i) {
    std::vector<Occurrences> seen;
    collect(bound.value, true, seen);
    for (const auto& binding : bound.bindings) collect(binding.second, true, seen);
    const Occurrences* largest = nullptr;
    for (const Occurrences& o : seen)
      if (o.count > 1 && o.unconditional && (!largest || o.size > largest->size)) largest = &o;
    if (!largest) break;
    ir::Var v(prefix + std::to_string(i), largest->expr.dtype());
    Replace replace(largest->expr, v);
    bound.value = replace.mutate(bound.value);
    for (auto& binding : bound.bindings) binding.second = replace.mutate(binding.second);
    bound.bindings.insert(bound.bindings.begin(), {v, largest->expr});
  }
  return bound;
}

}  // namespace tessera::codegen
