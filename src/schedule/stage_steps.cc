#include "schedule/stage_steps.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "ir/functor.h"
#include "schedule/iter_names.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::schedule {

namespace {

const char* const kCacheReadTag = "cache_read";

// The stage's axis names, in order.
std::vector<std::string> axis_names(const ir::TensorNode& t) {
  std::vector<std::string> names;
  for (const auto& a : t.axes) names.push_back(a.var.name());
  return names;
}

// Stage `idx` computes `replacement` instead (where it did, and for the
// stage's readers), and a new stage computing `producer` comes before it.
void replace_stage(State& state, int idx, const ir::Tensor& replacement, const ir::Tensor& producer) {
  const Stage& old = state.stages()[idx];
  Stage s = make_stage(replacement);
  s.location = old.location;
  s.attach_stage = old.attach_stage;
  s.attach_iter = old.attach_iter;
  state.stages()[idx] = s;
  state.alias(replacement.get(), idx);
  state.insert_stage(idx, make_stage(producer));
}

}  // namespace

bool is_cache_write_local(const ir::TensorNode& t) { return t.attrs.count("cache_write") > 0; }

std::string memory_scope(const ir::TensorNode& t) {
  const auto scope = t.attrs.find("scope");
  return scope == t.attrs.end() ? "" : scope->second;
}

namespace {
void check_scope(const std::string& what, const std::string& scope, bool empty_allowed, bool fragment_allowed) {
  if (scope == "shared" || scope == "local" || (empty_allowed && scope.empty()) ||
      (fragment_allowed && scope == "fragment"))
    return;
  throw Error(what + ": unknown scope " + support::quoted(scope) + " (valid: shared, local" +
              (fragment_allowed ? ", fragment)" : ")"));
}
}  // namespace

bool is_cache_read_copy(const ir::TensorNode& t) { return t.tag == kCacheReadTag; }

void apply_cache_write(State& state, const CacheWriteStep& st) {
  int idx = state.stage_index(st.stage);
  Stage& s = state.stages()[idx];
  if (!s.loop_steps.empty())
    throw Error("cache_write of " + support::quoted(st.stage) + " must come before its loops are transformed");
  check_scope("cache_write of " + support::quoted(st.stage), st.scope, true, true);
  const ir::Tensor original = s.tensor;

  auto local = std::make_shared<ir::TensorNode>(*original);
  local->name = cache_write_name(original->name);
  local->attrs["cache_write"] = "1";
  local->attrs["scope"] = st.scope.empty() ? "local" : st.scope;
  ir::Tensor local_tensor = local;
  ir::Tensor copy = ir::compute(
      original->shape,
      [&](const std::vector<ir::Var>& v) {
        return ir::load(local_tensor, std::vector<ir::Expr>(v.begin(), v.end()));
      },
      original->name, original->tag, axis_names(*original), original->attrs);
  replace_stage(state, idx, copy, local_tensor);
}

void apply_cache_read(State& state, const CacheReadStep& st) {
  const int idx = state.stage_index(st.stage);
  const std::string what = "cache_read of " + support::quoted(st.tensor) + " for " + support::quoted(st.stage);
  const ir::Tensor reader = state.stages()[idx].tensor;
  if (state.stages()[idx].location == Location::Inlined) throw Error(what + ": the stage is inlined");
  check_scope(what, st.scope, true, false);
  ir::Tensor source;
  for (const auto& in : reader->inputs())
    if (in->name == st.tensor) source = in;
  if (!source) throw Error(what + ": the stage does not read it");
  if (!st.dtype.empty() && (st.dtype != "float16" || ir::compute_type(source->dtype) != ir::DType::Float32))
    throw Error(what + ": a copy in " + support::quoted(st.dtype) + " (only a float tensor's copy may be \"float16\")");
  const size_t rank = source->shape.size();
  std::vector<int> sorted = st.layout;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted.size() != rank || sorted[i] != static_cast<int>(i))
      throw Error(what + ": layout must order the tensor's " + std::to_string(rank) + " dimensions, got " +
                  nlohmann::json(st.layout).dump());
  const std::string name = cache_read_name(st.tensor);
  for (const auto& s : state.stages())
    if (s.name() == name) throw Error(what + ": stage " + support::quoted(name) + " exists already");

  std::vector<int64_t> shape;
  std::vector<std::string> names;
  for (int d : st.layout) {
    shape.push_back(source->shape[d]);
    names.push_back(cache_read_axis(d));
  }
  ir::Tensor cache = ir::compute(
      shape,
      [&](const std::vector<ir::Var>& v) {
        std::vector<ir::Expr> at(rank);
        for (size_t i = 0; i < rank; ++i) at[st.layout[i]] = v[i];
        return ir::load(source, at);
      },
      name, kCacheReadTag, names,
      st.scope.empty() ? std::map<std::string, std::string>{} : std::map<std::string, std::string>{{"scope", st.scope}});
  if (st.dtype == "float16") {
    auto half = std::make_shared<ir::TensorNode>(*cache);
    half->dtype = ir::DType::Float16;
    cache = half;
  }
  struct Redirect : ir::ExprMutator {
    const ir::TensorNode* from;
    ir::Tensor to;
    const std::vector<int>* layout;
    ir::Expr mutate_load(const ir::TensorLoadNode*, const ir::Expr& e) override {
      ir::Expr m = mutate_children(e);
      const auto* l = m.as<ir::TensorLoadNode>();
      if (l->tensor.get() != from) return m;
      std::vector<ir::Expr> at;
      for (int d : *layout) at.push_back(l->indices[d]);
      return ir::load(to, at);
    }
  } redirect;
  redirect.from = source.get();
  redirect.to = cache;
  redirect.layout = &st.layout;
  auto redirected = std::make_shared<ir::TensorNode>(*reader);
  redirected->body = redirect.mutate(reader->body);
  // The stage keeps its loops: the copy has the same axis variables.
  state.stages()[idx].tensor = redirected;
  state.alias(redirected.get(), idx);
  state.insert_stage(idx, make_stage(cache));
}

void apply_rfactor(State& state, const RfactorStep& st) {
  const int idx = state.stage_index(st.stage);
  const std::string what = "rfactor of " + support::quoted(st.stage);
  if (!state.stages()[idx].loop_steps.empty()) throw Error(what + " must come before its loops are transformed");
  const ir::Tensor original = state.stages()[idx].tensor;
  const auto* red = original->body.as<ir::ReduceNode>();
  if (!red) throw Error(what + ": the stage is not a reduction");
  size_t k = red->axes.size();
  std::string have;
  for (size_t i = 0; i < red->axes.size(); ++i) {
    if (red->axes[i].var.name() == st.axis) k = i;
    have += (have.empty() ? "" : ", ") + red->axes[i].var.name();
  }
  if (k == red->axes.size()) throw Error(what + ": no reduce axis " + support::quoted(st.axis) + " (it has " + have + ")");
  const int64_t extent = red->axes[k].extent;
  if (st.factor < 1 || extent % st.factor != 0)
    throw Error(what + ": factor " + std::to_string(st.factor) + " does not divide the extent " +
                std::to_string(extent) + " of " + support::quoted(st.axis));

  // stage.rf(axes.., axis_i) = reduce over axis_o and the other reduce axes,
  // with axis = axis_o * factor + axis_i; by range, stage.rf(axis_i, axes..)
  // with axis = axis_i * (extent / factor) + axis_o, each range's partial
  // results a contiguous block (fresh reduce variables: each stage owns its
  // loops).
  const size_t first = st.by_range ? 1 : 0;  // where the stage's own axes start in the rf stage's
  std::vector<int64_t> rf_shape = original->shape;
  std::vector<std::string> rf_names = axis_names(*original);
  rf_shape.insert(st.by_range ? rf_shape.begin() : rf_shape.end(), st.factor);
  rf_names.insert(st.by_range ? rf_names.begin() : rf_names.end(), rfactor_inner(st.axis));
  // The partial results are read where they are made: never kept whole.
  std::map<std::string, std::string> rf_attrs = original->attrs;
  rf_attrs.erase("kept_whole");
  const ir::Tensor rf = ir::compute(
      rf_shape,
      [&](const std::vector<ir::Var>& v) {
        ir::VarMap map;
        for (size_t d = 0; d < original->axes.size(); ++d) map[original->axes[d].var] = v[first + d];
        const ir::Var partial = st.by_range ? v.front() : v.back();
        std::vector<ir::IterVar> axes;
        for (size_t i = 0; i < red->axes.size(); ++i) {
          if (i == k) {
            axes.push_back(ir::reduce_axis(extent / st.factor, rfactor_outer(st.axis)));
            map[red->axes[i].var] = st.by_range ? partial * ir::make_int(extent / st.factor) + axes.back().var
                                                : axes.back().var * ir::make_int(st.factor) + partial;
          } else {
            axes.push_back(ir::reduce_axis(red->axes[i].extent, red->axes[i].var.name()));
            map[red->axes[i].var] = axes.back().var;
          }
        }
        return ir::reduce(red->combiner, ir::substitute(red->source, map), axes);
      },
      rfactor_name(original->name), original->tag, rf_names, rf_attrs);
  const ir::Tensor combined = ir::compute(
      original->shape,
      [&](const std::vector<ir::Var>& v) {
        const ir::IterVar inner = ir::reduce_axis(st.factor, rfactor_inner(st.axis));
        std::vector<ir::Expr> at(v.begin(), v.end());
        at.insert(st.by_range ? at.begin() : at.end(), inner.var);
        return ir::reduce(red->combiner, ir::load(rf, at), {inner});
      },
      original->name, original->tag, axis_names(*original), original->attrs);
  replace_stage(state, idx, combined, rf);
}

}  // namespace tessera::schedule
