#include "schedule/state.h"

#include <set>
#include <sstream>

#include "ir/functor.h"
#include "schedule/iter_names.h"
#include "support/checked_math.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::schedule {

std::string to_string(Annotation a) {
  switch (a) {
    case Annotation::None: return "none";
    case Annotation::Parallel: return "parallel";
    case Annotation::Vectorize: return "vectorize";
    case Annotation::Unroll: return "unroll";
    case Annotation::TensorCore: return "tensor_core";
    case Annotation::DotProduct: return "dot_product";
    case Annotation::Pipeline: return "pipeline";
    case Annotation::BlockX: return "blockIdx.x";
    case Annotation::BlockY: return "blockIdx.y";
    case Annotation::BlockZ: return "blockIdx.z";
    case Annotation::ThreadX: return "threadIdx.x";
    case Annotation::ThreadY: return "threadIdx.y";
    case Annotation::ThreadZ: return "threadIdx.z";
    case Annotation::VThread: return "vthread";
  }
  return "?";
}

bool is_gpu_binding(Annotation a) { return a >= Annotation::BlockX; }

Annotation annotation_from_string(const std::string& s) {
  if (s == "none") return Annotation::None;
  if (s == "parallel") return Annotation::Parallel;
  if (s == "vectorize") return Annotation::Vectorize;
  if (s == "unroll") return Annotation::Unroll;
  if (s == "tensor_core") return Annotation::TensorCore;
  if (s == "dot_product") return Annotation::DotProduct;
  if (s == "pipeline") return Annotation::Pipeline;
  for (Annotation a : {Annotation::BlockX, Annotation::BlockY, Annotation::BlockZ, Annotation::ThreadX,
                       Annotation::ThreadY, Annotation::ThreadZ, Annotation::VThread})
    if (s == to_string(a)) return a;
  throw Error("unknown annotation " + support::quoted(s) +
              " (valid: none, parallel, vectorize, unroll, tensor_core, dot_product, pipeline, blockIdx.x|y|z, "
              "threadIdx.x|y|z, vthread)");
}

int Stage::iter_index(const std::string& iter_name) const {
  for (size_t i = 0; i < iters.size(); ++i)
    if (iters[i].name == iter_name) return static_cast<int>(i);
  std::string have;
  for (const auto& it : iters) have += (have.empty() ? "" : ", ") + it.name;
  throw Error("stage " + support::quoted(name()) + " has no iterator " + support::quoted(iter_name) +
              " (it has: " + have + ")");
}

Stage make_stage(const ir::Tensor& t, const std::vector<int64_t>& extents) {
  Stage s;
  s.tensor = t;
  auto add = [&](const ir::IterVar& iv, int64_t extent) {
    Iterator it;
    it.name = iv.var.name();
    it.var = ir::Var(iv.var.name());
    it.extent = extent;
    it.kind = iv.kind;
    s.axis_values.push_back(it.var);
    s.iters.push_back(std::move(it));
  };
  for (size_t i = 0; i < t->axes.size(); ++i) add(t->axes[i], extents.empty() ? t->axes[i].extent : extents[i]);
  for (const auto& a : t->reduce_axes) add(a, a.extent);
  return s;
}

namespace {
void substitute_axes(Stage& s, const ir::VarMap& m) {
  for (auto& v : s.axis_values) v = ir::substitute(v, m);
  for (auto& g : s.guards) g = ir::substitute(g, m);
}
}  // namespace

void Stage::split(const SplitStep& st) {
  int idx = iter_index(st.iter);
  Iterator old = iters[idx];
  const std::string where = "split of " + name() + "." + st.iter;
  if (st.lengths.empty()) throw Error(where + ": no lengths given");
  if (st.lengths.size() > kMaxSplitLengths)
    throw Error(where + ": " + std::to_string(st.lengths.size()) + " lengths, more than " +
                std::to_string(kMaxSplitLengths));
  if (iters.size() + st.lengths.size() > kMaxStageIterators)
    throw Error(where + ": the stage would have more than " + std::to_string(kMaxStageIterators) + " iterators");
  for (int64_t l : st.lengths)
    if (l <= 0) throw Error(where + ": length " + std::to_string(l) + " is not positive");
  const int64_t product = support::bounded_product(st.lengths, where);
  std::vector<Iterator> parts;
  Iterator outer = old;
  outer.name = split_part(old.name, 0);
  outer.var = ir::Var(outer.name);
  outer.extent = (old.extent + product - 1) / product;
  outer.annotation = Annotation::None;
  parts.push_back(outer);
  ir::Expr value = outer.var;
  for (size_t i = 0; i < st.lengths.size(); ++i) {
    Iterator inner = old;
    inner.name = split_part(old.name, i + 1);
    inner.var = ir::Var(inner.name);
    inner.extent = st.lengths[i];
    inner.annotation = Annotation::None;
    parts.push_back(inner);
    value = value * st.lengths[i] + inner.var;
  }
  ir::VarMap m;
  m[old.var] = value;
  substitute_axes(*this, m);
  if (old.extent % product != 0) guards.push_back(value < old.extent);
  iters.erase(iters.begin() + idx);
  iters.insert(iters.begin() + idx, parts.begin(), parts.end());
  loop_steps.push_back(st);
}

void Stage::reorder(const ReorderStep& st) {
  if (st.order.size() != iters.size())
    throw Error("reorder of " + name() + ": gives " + std::to_string(st.order.size()) +
                " iterators but the stage has " + std::to_string(iters.size()));
  std::vector<Iterator> out;
  std::set<std::string> seen;
  for (const auto& n : st.order) {
    if (!seen.insert(n).second)
      throw Error("reorder of " + name() + ": iterator " + support::quoted(n) + " given twice");
    out.push_back(iters[iter_index(n)]);
  }
  iters = std::move(out);
  loop_steps.push_back(st);
}

void Stage::fuse(const FuseStep& st) {
  if (st.iters.empty()) throw Error("fuse of " + name() + ": no iterators given");
  int first = iter_index(st.iters[0]);
  std::vector<Iterator> parts;
  for (size_t i = 0; i < st.iters.size(); ++i) {
    int idx = iter_index(st.iters[i]);
    if (idx != first + static_cast<int>(i))
      throw Error("fuse of " + name() + ": iterators must be adjacent and in loop order");
    parts.push_back(iters[idx]);
    if (parts.back().kind != parts[0].kind)
      throw Error("fuse of " + name() + ": cannot fuse spatial and reduce iterators");
  }
  Iterator fused = parts[0];
  std::vector<std::string> names;
  std::vector<int64_t> extents;
  for (const auto& p : parts) {
    names.push_back(p.name);
    extents.push_back(p.extent);
  }
  fused.name = fused_name(names);
  fused.extent = support::bounded_product(extents, "fuse of " + name());
  fused.var = ir::Var(fused.name);
  fused.annotation = Annotation::None;
  ir::VarMap m;
  int64_t inner = 1;
  for (int i = static_cast<int>(parts.size()) - 1; i >= 0; --i) {
    ir::Expr v = inner == 1 ? ir::Expr(fused.var) : ir::floordiv(fused.var, inner);
    if (i > 0) v = ir::floormod(v, parts[i].extent);
    m[parts[i].var] = v;
    inner *= parts[i].extent;
  }
  substitute_axes(*this, m);
  iters.erase(iters.begin() + first, iters.begin() + first + parts.size());
  iters.insert(iters.begin() + first, fused);
  loop_steps.push_back(st);
}

void Stage::annotate(const AnnotateStep& st) {
  Iterator& it = iters[iter_index(st.iter)];
  // Iterations of a reduction add into the same outputs: in parallel they
  // race (an rfactor makes the partial results independent first).
  if (st.annotation == Annotation::Parallel && it.kind == ir::IterKind::Reduce)
    throw Error("annotate " + name() + "." + st.iter + ": a reduce iterator cannot run in parallel");
  // threadIdx.x is the exception: the block's threads reduce together, in
  // a tree through shared memory (tir/lower.h, a cross-thread reduction).
  if (is_gpu_binding(st.annotation) && st.annotation != Annotation::ThreadX && it.kind == ir::IterKind::Reduce)
    throw Error("bind " + name() + "." + st.iter + " to " + to_string(st.annotation) +
                ": a reduce iterator cannot be spread over blocks or threads other than threadIdx.x (rfactor it first)");
  if (st.annotation == Annotation::TensorCore && it.kind == ir::IterKind::Reduce)
    throw Error("annotate " + name() + "." + st.iter +
                ": tensor_core marks the first of a tile's spatial loops (its rows), not a reduce loop");
  if (st.annotation == Annotation::DotProduct && (it.kind != ir::IterKind::Reduce || it.extent != 4))
    throw Error("annotate " + name() + "." + st.iter + ": dot_product marks a reduce loop of 4 (the bytes one 32-bit " +
                "lane sums), not " + (it.kind == ir::IterKind::Reduce ? "one of " + std::to_string(it.extent) : "a spatial loop"));
  if (is_gpu_binding(st.annotation))
    for (const Iterator& other : iters)
      if (other.annotation == st.annotation && other.name != st.iter)
        throw Error("bind " + name() + "." + st.iter + " to " + to_string(st.annotation) + ": " + name() + "." +
                    other.name + " is bound to it already");
  it.annotation = st.annotation;
  loop_steps.push_back(st);
}

Stage Stage::rebind(const std::vector<int64_t>& extents) const {
  Stage s = make_stage(tensor, extents);
  s.location = location;
  s.attach_stage = attach_stage;
  s.attach_iter = attach_iter;
  s.auto_unroll_max_step = auto_unroll_max_step;
  for (const auto& step : loop_steps) {
    if (auto* x = std::get_if<SplitStep>(&step)) s.split(*x);
    else if (auto* x = std::get_if<FuseStep>(&step)) s.fuse(*x);
    else if (auto* x = std::get_if<ReorderStep>(&step)) s.reorder(*x);
    else if (auto* x = std::get_if<AnnotateStep>(&step)) s.annotate(*x);
  }
  return s;
}

State::State(const ir::ComputeDAG& dag) : dag_(dag) {
  for (const auto& t : dag.tensors()) {
    if (t->is_placeholder()) continue;
    stage_of_[t.get()] = static_cast<int>(stages_.size());
    stages_.push_back(make_stage(t));
  }
}

int State::stage_index(const std::string& name) const {
  for (size_t i = 0; i < stages_.size(); ++i)
    if (stages_[i].name() == name) return static_cast<int>(i);
  std::string have;
  for (const auto& s : stages_) have += (have.empty() ? "" : ", ") + s.name();
  throw Error("no stage named " + support::quoted(name) + " (stages: " + have + ")");
}

int State::stage_of(const ir::TensorNode* t) const {
  auto it = stage_of_.find(t);
  return it == stage_of_.end() ? -1 : it->second;
}

void State::alias(const ir::TensorNode* t, int stage) { stage_of_[t] = stage; }

void State::insert_stage(int pos, Stage s) {
  for (auto& [node, idx] : stage_of_)
    if (idx >= pos) ++idx;
  stage_of_[s.tensor.get()] = pos;
  stages_.insert(stages_.begin() + pos, std::move(s));
}

std::string State::print() const {
  std::ostringstream os;
  for (const auto& s : stages_) {
    os << s.name();
    if (s.location == Location::Inlined) os << " (inlined)";
    if (s.location == Location::At) os << " (at " << s.attach_stage << "." << s.attach_iter << ")";
    os << ":";
    for (const auto& it : s.iters) {
      os << " " << it.name << "[" << it.extent << "]";
      if (it.kind == ir::IterKind::Reduce) os << "r";
      if (it.annotation != Annotation::None) os << "{" << to_string(it.annotation) << "}";
    }
    if (s.auto_unroll_max_step) os << " auto_unroll_max_step=" << s.auto_unroll_max_step;
    os << "\n";
  }
  return os.str();
}

}  // namespace tessera::schedule
