#include "autoschedule/stage_analysis.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/functor.h"
#include "schedule/stage_steps.h"

namespace tessera::autoschedule {

namespace {

using schedule::Location;
using schedule::State;

// Every load in `stage`'s body.
std::vector<const ir::TensorLoadNode*> loads_of_any(const State& state, int stage) {
  std::vector<const ir::TensorLoadNode*> loads;
  const ir::Tensor& t = state.stages()[stage].tensor;
  if (!t->body) return loads;
  ir::post_order_visit(t->body, [&](const ir::Expr& e) {
    if (e.kind() == ir::ExprKind::TensorLoad) loads.push_back(static_cast<const ir::TensorLoadNode*>(e.get()));
  });
  return loads;
}

// Every load in `stage`'s body of a tensor computed by stage `producer`.
std::vector<const ir::TensorLoadNode*> loads_of(const State& state, int stage, int producer) {
  std::vector<const ir::TensorLoadNode*> loads = loads_of_any(state, stage);
  std::erase_if(loads, [&](const ir::TensorLoadNode* l) { return state.stage_of(l->tensor.get()) != producer; });
  return loads;
}

// The stages reading `stage` directly (inlined or not).
std::vector<int> direct_consumers(const State& state, int stage) {
  std::vector<int> out;
  for (size_t q = 0; q < state.stages().size(); ++q) {
    if (static_cast<int>(q) == stage) continue;
    const auto inputs = state.stages()[q].tensor->inputs();
    if (std::any_of(inputs.begin(), inputs.end(), [&](const ir::Tensor& t) { return state.stage_of(t.get()) == stage; }))
      out.push_back(static_cast<int>(q));
  }
  return out;
}

// `consumer` reads `producer` only as consumer[i, j, ...] = f(producer[i, j, ...]).
bool reads_elementwise(const State& state, int consumer, int producer) {
  const ir::Tensor& c = state.stages()[consumer].tensor;
  const ir::Tensor& p = state.stages()[producer].tensor;
  if (c->is_reduction() || c->shape != p->shape) return false;
  const auto loads = loads_of(state, consumer, producer);
  if (loads.empty()) return false;
  for (const auto* load : loads) {
    if (load->indices.size() != c->axes.size()) return false;
    for (size_t i = 0; i < c->axes.size(); ++i) {
      const ir::Expr& idx = load->indices[i];
      if (idx.kind() != ir::ExprKind::Var || !ir::structural_equal(idx, c->axes[i].var)) return false;
    }
  }
  return true;
}

}  // namespace

bool is_output(const State& state, int stage) {
  for (const auto& o : state.dag().outputs())
    if (state.stage_of(o.get()) == stage) return true;
  return false;
}

std::vector<int> consumers(const State& state, int stage) {
  std::set<int> out;
  std::vector<int> todo = direct_consumers(state, stage);
  std::set<int> seen;
  while (!todo.empty()) {
    int q = todo.back();
    todo.pop_back();
    if (!seen.insert(q).second) continue;
    if (state.stages()[q].location == Location::Inlined) {
      for (int r : direct_consumers(state, q)) todo.push_back(r);
    } else {
      out.insert(q);
    }
  }
  return {out.begin(), out.end()};
}

bool is_strictly_inlineable(const State& state, int stage) {
  const ir::Tensor& t = state.stages()[stage].tensor;
  // A copy into another layout (attrs "layout_copy") exists so that its
  // reader's vectors are contiguous: inlining it would undo that.
  if (t->is_placeholder() || t->is_reduction() || is_output(state, stage) || schedule::is_cache_read_copy(*t) ||
      t->attrs.count("layout_copy"))
    return false;
  for (int c : direct_consumers(state, stage)) {
    const auto dot = byte_dot_product_axes(state, c);
    if (dot && dot->unsigned_operand == t) return false;
  }
  bool calls = false;
  std::map<const ir::TensorNode*, int> reads;
  ir::post_order_visit(t->body, [&](const ir::Expr& e) {
    calls = calls || e.kind() == ir::ExprKind::Call;
    if (e.kind() == ir::ExprKind::TensorLoad) ++reads[static_cast<const ir::TensorLoadNode*>(e.get())->tensor.get()];
  });
  const bool gathers = std::any_of(reads.begin(), reads.end(), [](const auto& r) { return r.second > 1; });
  return !calls && !gathers;
}

bool needs_multi_level_tiling(const State& state, int stage) {
  const ir::Tensor& t = state.stages()[stage].tensor;
  if (!t->is_reduction()) return false;
  for (const auto* load : loads_of_any(state, stage)) {
    for (const auto& axis : t->axes) {
      if (axis.extent <= 1) continue;
      bool used = std::any_of(load->indices.begin(), load->indices.end(),
                              [&](const ir::Expr& idx) { return ir::uses_var(idx, axis.var); });
      if (!used) return true;
    }
  }
  return false;
}

std::vector<StridedInput> strided_inputs(const State& state, int stage) {
  const ir::Tensor& t = state.stages()[stage].tensor;
  std::vector<StridedInput> out;
  if (t->axes.empty()) return out;
  const ir::Var& inner = t->axes.back().var;
  for (const auto* load : loads_of_any(state, stage)) {
    if (!load->tensor->is_placeholder()) continue;
    if (std::any_of(out.begin(), out.end(), [&](const StridedInput& s) { return s.tensor == load->tensor; })) continue;
    const auto& idx = load->indices;
    for (size_t d = 0; d + 1 < idx.size(); ++d) {
      if (!ir::uses_var(idx[d], inner)) continue;
      int64_t reuse = 1;
      for (const auto& axis : t->axes)
        if (std::none_of(idx.begin(), idx.end(), [&](const ir::Expr& e) { return ir::uses_var(e, axis.var); }))
          reuse *= axis.extent;
      out.push_back({load->tensor, d, reuse});
      break;
    }
  }
  return out;
}

int elementwise_matched_consumer(const State& state, int stage) {
  int current = stage;
  while (true) {
    const auto direct = direct_consumers(state, current);
    if (direct.size() != 1 || !reads_elementwise(state, direct[0], current)) return -1;
    if (state.stages()[direct[0]].location != Location::Inlined) return direct[0];
    current = direct[0];
  }
}

namespace {

bool is_var(const ir::Expr& e, const ir::Var& v) {
  return e.kind() == ir::ExprKind::Var && ir::structural_equal(e, v);
}

}  // namespace

std::optional<ByteDotProductAxes> byte_dot_product_axes(const State& state, int stage) {
  const ir::Tensor& t = state.stages()[stage].tensor;
  if (t->dtype != ir::DType::Int32 || t->axes.empty() || t->reduce_axes.empty()) return std::nullopt;
  const ir::IterVar& lanes = t->axes.back();
  const ir::IterVar& bytes = t->reduce_axes.back();
  const auto* reduce = t->body.as<ir::ReduceNode>();
  if (!reduce || reduce->combiner != ir::ReduceKind::Sum || bytes.extent != 4 || lanes.extent < 2) return std::nullopt;
  ir::Expr product = reduce->source;
  while (product.kind() == ir::ExprKind::Cast) product = product.as<ir::CastNode>()->value;
  const std::optional<ir::BytesProduct> loads = ir::unsigned_times_signed(product);
  if (!loads) return std::nullopt;
  const auto& si = loads->signed_bytes->indices;
  const auto& ui = loads->unsigned_bytes->indices;
  if (si.size() < 2 || !is_var(si[si.size() - 2], lanes.var) || !is_var(si.back(), bytes.var) || ui.empty() ||
      !ir::uses_var(ui.back(), bytes.var) ||
      std::any_of(ui.begin(), ui.end(), [&](const ir::Expr& e) { return ir::uses_var(e, lanes.var); }))
    return std::nullopt;
  return ByteDotProductAxes{lanes.var.name(), bytes.var.name(), loads->unsigned_bytes->tensor};
}

int64_t spatial_length(const State& state, int stage) {
  int64_t n = 1;
  for (const auto& a : state.stages()[stage].tensor->axes) n *= a.extent;
  return n;
}

int64_t reduce_length(const State& state, int stage) {
  int64_t n = 1;
  for (const auto& a : state.stages()[stage].tensor->reduce_axes) n *= a.extent;
  return n;
}

}  // namespace tessera::autoschedule
