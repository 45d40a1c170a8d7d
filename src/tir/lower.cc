#include "tir/lower.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <set>

#include "ir/functor.h"
#include "ir/printer.h"
#include "schedule/stage_steps.h"
#include "tessera/error.h"
#include "tir/arith.h"
#include "tir/partition_loops.h"
#include "tir/pipeline_fetches.h"
#include "tir/printer.h"
#include "tir/simplify.h"
#include "tir/skip_padding.h"
#include "tir/stage_fetches.h"
#include "tir/stmt_functor.h"
#include "tir/unroll.h"
#include "tir/verify.h"

namespace tessera::tir {

using ir::Expr;
using schedule::Location;
using schedule::Stage;
using schedule::State;

namespace {

// Where a stage's values live. A region buffer holds only the part of the
// tensor one iteration of the attach loop needs, starting at `offset`.
struct BufferInfo {
  ir::Tensor buffer;
  std::vector<Expr> offset;  // per spatial dimension; empty = starts at 0
  bool region = false;       // buffer is region-shaped (indices are shifted by offset)
};

// The element type of a stage's scratch buffer: an integer stage's own (an
// int8 convolution's padded bytes, its int32 accumulators), a copy asked for
// in half (schedule::CacheReadStep's dtype: a tensor-core operand), else
// fp32 (a half-storage network's intermediate stages compute and keep fp32).
ir::DType scratch_type(const ir::TensorNode& t) {
  if (ir::is_integer(t.dtype)) return t.dtype;
  if (t.dtype == ir::DType::Float16 && schedule::is_cache_read_copy(t)) return t.dtype;
  return ir::DType::Float32;
}

ForKind for_kind(schedule::Annotation a) {
  switch (a) {
    case schedule::Annotation::Parallel: return ForKind::Parallel;
    case schedule::Annotation::Vectorize: return ForKind::Vectorized;
    case schedule::Annotation::Unroll: return ForKind::Unrolled;
    case schedule::Annotation::TensorCore: return ForKind::TensorCore;
    case schedule::Annotation::DotProduct: return ForKind::DotProduct;
    case schedule::Annotation::Pipeline: return ForKind::Pipelined;
    case schedule::Annotation::BlockX: return ForKind::BlockX;
    case schedule::Annotation::BlockY: return ForKind::BlockY;
    case schedule::Annotation::BlockZ: return ForKind::BlockZ;
    case schedule::Annotation::ThreadX: return ForKind::ThreadX;
    case schedule::Annotation::ThreadY: return ForKind::ThreadY;
    case schedule::Annotation::ThreadZ: return ForKind::ThreadZ;
    case schedule::Annotation::VThread: return ForKind::VThread;
    default: return ForKind::Serial;
  }
}

// Loops whose iterations are a block's threads (virtual ones included): a
// shared buffer computed inside them serves all of them.
bool spreads_over_threads(schedule::Annotation a) {
  return a == schedule::Annotation::ThreadX || a == schedule::Annotation::ThreadY ||
         a == schedule::Annotation::ThreadZ || a == schedule::Annotation::VThread;
}

// The memory an attached stage's region buffer lives in: what its cache
// step named, else each thread's own (the CPU reads every scope alike).
MemoryScope scope_of(const ir::TensorNode& t) {
  const std::string scope = schedule::memory_scope(t);
  if (scope == "shared") return MemoryScope::Shared;
  return scope == "fragment" ? MemoryScope::Fragment : MemoryScope::Local;
}

class Lowerer {
 public:
  explicit Lowerer(const State& state) : state_(state), buffers_(state.stages().size()) {}

  LoweredFunc run(const std::string& name) {
    LoweredFunc f;
    f.name = name;
    f.args = state_.dag().arguments();
    for (const auto& out : state_.dag().outputs()) {
      int s = state_.stage_of(out.get());
      buffers_[s] = BufferInfo{out, {}, false};
    }
    std::vector<ir::Tensor> scratch;
    for (size_t i = 0; i < state_.stages().size(); ++i) {
      const Stage& s = state_.stages()[i];
      // A stage its operator keeps whole ("kept_whole": results computed
      // piece by piece inside one loop and read after it, such as attention's
      // per key tile maxima) has its whole buffer, as an output does, wherever
      // it is computed.
      const bool whole = s.location == Location::Root || s.tensor->attrs.count("kept_whole");
      if (whole && !buffers_[i]) {
        buffers_[i] = BufferInfo{ir::placeholder(s.tensor->shape, s.name(), scratch_type(*s.tensor)), {}, false};
        scratch.push_back(buffers_[i]->buffer);
      }
    }
    std::vector<Stmt> body;
    for (size_t i = 0; i < state_.stages().size(); ++i) {
      const Stage& s = state_.stages()[i];
      if (s.location == Location::Root) body.push_back(gen_stage(static_cast<int>(i), s, {}));
    }
    for (size_t i = 0; i < state_.stages().size(); ++i) {
      const Stage& s = state_.stages()[i];
      if (s.location == Location::At && !generated_.count(static_cast<int>(i))) check_attachment(s);
    }
    Stmt stmt = make_seq(std::move(body));
    for (auto it = scratch.rbegin(); it != scratch.rend(); ++it) stmt = make_allocate(*it, stmt);
    f.body = stmt;
    return f;
  }

 private:
  void check_attachment(const Stage& s) {
    throw Error("stage '" + s.name() + "' is computed at " + s.attach_stage + "." + s.attach_iter +
                ", which is never generated (is the target inlined or itself unattached?)");
  }

  // Replaces loads of inlined stages by their definitions, recursively.
  Expr expand_inline(const Expr& e) {
    struct Inliner : ir::ExprMutator {
      Lowerer* self;
      Expr mutate_load(const ir::TensorLoadNode* n, const Expr& e) override {
        Expr m = mutate_children(e);
        auto* l = m.as<ir::TensorLoadNode>();
        int p = self->state_.stage_of(l->tensor.get());
        if (p < 0 || self->state_.stages()[p].location != Location::Inlined) return m;
        const ir::Tensor& t = self->state_.stages()[p].tensor;
        ir::VarMap map;
        for (size_t d = 0; d < t->axes.size(); ++d) map[t->axes[d].var] = l->indices[d];
        return mutate(ir::substitute(t->body, map));
      }
    } inliner;
    inliner.self = this;
    return inliner.mutate(e);
  }

  // Points loads of computed stages at their buffers.
  Expr to_buffers(const Expr& e) {
    struct Rebuffer : ir::ExprMutator {
      Lowerer* self;
      Expr mutate_load(const ir::TensorLoadNode* n, const Expr& e) override {
        Expr m = mutate_children(e);
        auto* l = m.as<ir::TensorLoadNode>();
        int p = self->state_.stage_of(l->tensor.get());
        if (p < 0) return m;
        const auto& info = self->buffers_[p];
        if (!info)
          throw Error("stage '" + self->state_.stages()[p].name() + "' is read before it is computed");
        std::vector<Expr> idx = l->indices;
        if (info->region)
          for (size_t d = 0; d < idx.size(); ++d) idx[d] = idx[d] - info->offset[d];
        return ir::load(info->buffer, idx);
      }
    } r;
    r.self = this;
    return r.mutate(e);
  }

  // The region of producer `p` that one iteration of loop `k` of consumer
  // stage `c` reads: per dimension a symbolic start and a constant extent.
  struct Region {
    std::vector<Expr> min;
    std::vector<int64_t> extent;
  };

  // floordiv(o + i, c) = o / c + floordiv(i, c) and floormod(o + i, c) =
  // floormod(i, c) when every coefficient of the outer part o is a multiple
  // of c: the index of a flattened position (row * W + column) read by a
  // tile of whole rows. Returns o / c and the interval of the inner part's
  // quotient or remainder; nothing for other atoms.
  struct DivModSplit {
    LinearForm outer;
    Interval inner;
  };
  template <class IsInner>
  static std::optional<DivModSplit> split_div_mod(const Expr& atom, const IsInner& is_inner, const RangeMap& inner) {
    const bool div = atom.kind() == ir::ExprKind::FloorDiv, mod = atom.kind() == ir::ExprKind::FloorMod;
    int64_t c = 0;
    if (!div && !mod) return std::nullopt;
    auto* n = atom.as<ir::BinaryNode>();
    if (!ir::is_const_int(n->b, &c) || c <= 0) return std::nullopt;
    LinearForm e = linear_form(n->a), inner_part;
    DivModSplit split;
    inner_part.constant = e.constant;
    for (const auto& [a, coef] : e.terms) {
      if (is_inner(a)) {
        inner_part.add(a, coef);
      } else {
        if (coef % c != 0) return std::nullopt;
        if (div) split.outer.add(a, coef / c);
      }
    }
    Interval i = bound_of(inner_part.to_expr(), inner);
    if (!i.bounded()) return std::nullopt;
    if (div) {
      split.inner = {floor_div(i.min, c), floor_div(i.max, c)};
    } else {
      const bool one_period = floor_div(i.min, c) == floor_div(i.max, c);
      split.inner = one_period ? Interval{i.min - floor_div(i.min, c) * c, i.max - floor_div(i.max, c) * c}
                               : Interval{0, c - 1};
    }
    return split;
  }

  // The loads of `p` in `values` span, as the variables of `inner` run over
  // their ranges (every other variable held fixed), the returned region.
  // `known`: the ranges of every loop around the loads (outer ones too), for
  // simplifying their indices (x mod 1024 is x when x < 1024).
  Region infer_region(int p, const RangeMap& inner, const RangeMap& known, const std::vector<Expr>& values) {
    const ir::Tensor& pt = state_.stages()[p].tensor;
    size_t dims = pt->shape.size();
    auto is_inner_atom = [&](const Expr& atom) {
      bool uses = false;
      ir::post_order_visit(atom, [&](const Expr& x) {
        if (x.as<ir::VarNode>())
          uses |= inner.count(ir::Var(std::static_pointer_cast<const ir::VarNode>(x.ptr()))) > 0;
      });
      return uses;
    };

    std::vector<std::optional<LinearForm>> base(dims);
    std::vector<int64_t> lo(dims, Interval::kInf), hi(dims, -Interval::kInf);
    std::vector<bool> full(dims, false);
    for (const Expr& value : values) ir::post_order_visit(value, [&](const Expr& x) {
      auto* l = x.as<ir::TensorLoadNode>();
      if (!l || state_.stage_of(l->tensor.get()) != p) return;
      for (size_t d = 0; d < dims; ++d) {
        if (full[d]) continue;
        LinearForm f = linear_form(simplify(l->indices[d], known));
        LinearForm b;
        int64_t mn = 0, mx = 0;
        for (const auto& [atom, coef] : f.terms) {
          if (!is_inner_atom(atom)) {
            b.add(atom, coef);
            continue;
          }
          Interval r;
          if (atom.as<ir::VarNode>()) {
            r = inner.at(ir::Var(std::static_pointer_cast<const ir::VarNode>(atom.ptr())));
          } else if (auto split = split_div_mod(atom, is_inner_atom, inner)) {
            for (const auto& [outer_atom, outer_coef] : split->outer.terms) b.add(outer_atom, coef * outer_coef);
            r = split->inner;
          } else {  // not affine in the inner loops
            full[d] = true;
            break;
          }
          mn += coef > 0 ? coef * r.min : coef * r.max;
          mx += coef > 0 ? coef * r.max : coef * r.min;
        }
        if (full[d]) continue;
        mn += f.constant;
        mx += f.constant;
        if (!base[d]) {
          base[d] = b;
        } else {
          LinearForm diff = linear_form(base[d]->to_expr() - b.to_expr());
          if (!diff.terms.empty()) {
            full[d] = true;
            continue;
          }
          mn -= diff.constant;  // express this load relative to the first base
          mx -= diff.constant;
        }
        lo[d] = std::min(lo[d], mn);
        hi[d] = std::max(hi[d], mx);
      }
    });
    Region r;
    for (size_t d = 0; d < dims; ++d) {
      int64_t extent = full[d] ? pt->shape[d] : hi[d] - lo[d] + 1;
      if (full[d] || extent >= pt->shape[d]) {
        r.min.push_back(ir::make_int(0));
        r.extent.push_back(pt->shape[d]);
      } else {
        r.min.push_back(simplify(base[d]->to_expr() + ir::make_int(lo[d])));
        r.extent.push_back(extent);
      }
    }
    return r;
  }

  // A stage computed inside a loop of another: where, over which region.
  struct AttachedStage {
    int stage = -1, loop = -1;
    Expr value;  // what one element of it computes (inlined stages expanded)
    Region region;
    Stage local;      // the stage's loops over its region
    bool output = false;
    bool placed = false;
  };

  bool reads(const Expr& e, int p) const {
    bool found = false;
    ir::post_order_visit(e, [&](const Expr& x) {
      if (auto* l = x.as<ir::TensorLoadNode>()) found |= state_.stage_of(l->tensor.get()) == p;
    });
    return found;
  }

  // Infers the region and buffer of every stage attached to a loop of `s`.
  // A stage may be read by `s` itself or by another stage attached at the
  // same or a deeper loop of `s` (e.g. a depthwise convolution computed per
  // tile of positions, read by the 1x1 convolution computed per channel
  // group inside it): that reader's region is inferred first, and its
  // values over its region bound what it reads.
  std::vector<AttachedStage> place_attached(const Stage& s, const std::vector<std::vector<int>>& attached,
                                            const Expr& value) {
    std::vector<AttachedStage> here;
    for (size_t k = 0; k < attached.size(); ++k)
      for (int p : attached[k]) {
        AttachedStage a;
        a.stage = p;
        a.loop = static_cast<int>(k);
        a.value = expand_inline(source_of(state_.stages()[p].tensor));
        here.push_back(std::move(a));
      }
    size_t remaining = here.size();
    while (remaining > 0) {
      bool progress = false;
      for (AttachedStage& a : here) {
        if (a.placed) continue;
        const Stage& ps = state_.stages()[a.stage];
        RangeMap inner;
        for (size_t i = a.loop + 1; i < s.iters.size(); ++i) inner[s.iters[i].var] = Interval{0, s.iters[i].extent - 1};
        // A shared buffer holds what every thread of the block reads: the
        // thread loops around it (this stage's, and those of the stages it
        // is computed inside) range as inner loops do.
        if (scope_of(*ps.tensor) == MemoryScope::Shared) {
          for (int i = 0; i <= a.loop; ++i)
            if (spreads_over_threads(s.iters[i].annotation)) inner[s.iters[i].var] = Interval{0, s.iters[i].extent - 1};
          for (const auto& [var, range] : enclosing_threads_) inner[var] = range;
        }
        std::vector<Expr> values;
        if (reads(value, a.stage)) values.push_back(value);
        bool waiting = false;
        for (const AttachedStage& q : here) {
          if (q.stage == a.stage || !reads(q.value, a.stage)) continue;
          if (q.loop < a.loop)
            throw Error("stage '" + ps.name() + "' is computed inside " + s.name() + "." + s.iters[a.loop].name +
                        ", but '" + state_.stages()[q.stage].name() + "', computed outside that loop, reads it");
          if (!q.placed) {
            waiting = true;
            break;
          }
          values.push_back(over_region(state_.stages()[q.stage].tensor, q.value, q.region, inner));
        }
        if (waiting) continue;
        if (values.empty())
          throw Error("stage '" + ps.name() + "' is computed at '" + s.name() +
                      "', which does not read it (nor does any stage computed inside it)");
        RangeMap known = inner;
        for (const auto& it : s.iters) known.emplace(it.var, Interval{0, it.extent - 1});
        for (const auto& [var, range] : enclosing_threads_) known.emplace(var, range);
        a.region = infer_region(a.stage, inner, known, values);
        a.local = ps.rebind(a.region.extent);
        a.output = buffers_[a.stage].has_value();
        if (!a.output)
          buffers_[a.stage] =
              BufferInfo{ir::placeholder(a.region.extent, ps.name(), scratch_type(*ps.tensor)), a.region.min, true};
        else buffers_[a.stage]->offset = a.region.min;
        a.placed = true;
        --remaining;
        progress = true;
      }
      if (!progress) throw Error("stages computed inside '" + s.name() + "' read each other in a cycle");
    }
    return here;
  }

  // The stages attached to one stage, each after the attached stages it
  // reads, and after the one inside which a kept-whole stage it reads is
  // computed (attention's tile maxima, inside the weighted values' loops:
  // the combination reads them once that stage is done). Otherwise in stage order.
  std::vector<AttachedStage> in_dependency_order(std::vector<AttachedStage> here) const {
    std::set<int> attached;
    for (const AttachedStage& a : here) attached.insert(a.stage);
    auto host = [&](int w) {  // the attached stage that w is computed inside, or -1
      for (int x = w; state_.stages()[x].location == Location::At;) {
        x = state_.stage_index(state_.stages()[x].attach_stage);
        if (attached.count(x)) return x;
      }
      return -1;
    };
    auto after = [&](const AttachedStage& a) {  // what must be generated before a
      std::set<int> before;
      ir::post_order_visit(a.value, [&](const Expr& e) {
        auto* l = e.as<ir::TensorLoadNode>();
        if (!l) return;
        const int p = state_.stage_of(l->tensor.get());
        if (p < 0 || p == a.stage) return;
        if (attached.count(p)) before.insert(p);
        if (state_.stages()[p].tensor->attrs.count("kept_whole") && host(p) >= 0 && host(p) != a.stage)
          before.insert(host(p));
      });
      return before;
    };
    std::vector<AttachedStage> ordered;
    std::set<int> done;
    while (ordered.size() < here.size()) {
      bool progress = false;
      for (const AttachedStage& a : here) {
        if (done.count(a.stage)) continue;
        const std::set<int> before = after(a);
        if (!std::includes(done.begin(), done.end(), before.begin(), before.end())) continue;
        ordered.push_back(a);
        done.insert(a.stage);
        progress = true;
        break;  // from the start again: stage order wherever it is free
      }
      if (!progress) throw Error("stages computed at one loop read each other in a cycle");
    }
    return ordered;
  }

  static Expr source_of(const ir::Tensor& t) {
    if (auto* r = t->body.as<ir::ReduceNode>()) return r->source;
    return t->body;
  }

  // `t_value` (t's body) as t computes it over `region`: each axis the
  // region's start plus a new variable over the region's extent, each reduce
  // axis over its whole range; the new variables join `inner`.
  static Expr over_region(const ir::Tensor& t, const Expr& t_value, const Region& region, RangeMap& inner) {
    ir::VarMap map;
    for (size_t d = 0; d < t->axes.size(); ++d) {
      ir::Var local(t->axes[d].var.name() + ".r");
      inner[local] = Interval{0, region.extent[d] - 1};
      map[t->axes[d].var] = region.min[d] + local;
    }
    for (const auto& r : t->reduce_axes) inner[r.var] = Interval{0, r.extent - 1};
    return ir::substitute(t_value, map);
  }

  // Guards that keep a region's computation inside the tensor, unless the
  // consumer's loop ranges prove it always is.
  std::vector<Expr> region_guards(const ir::Tensor& t, const Region& r, const Stage& local, const Stage& c, int k) {
    RangeMap outer;
    for (int i = 0; i <= k; ++i) outer[c.iters[i].var] = Interval{0, c.iters[i].extent - 1};
    std::vector<Expr> guards;
    for (size_t d = 0; d < r.min.size(); ++d) {
      Interval b = bound_of(r.min[d], outer);
      Expr at = r.min[d] + local.axis_values[d];
      if (b.max + r.extent[d] - 1 > t->shape[d] - 1) guards.push_back(at < t->shape[d]);
      if (b.min < 0) guards.push_back(at >= 0);
    }
    return guards;
  }

  // Position of the innermost iterator of `s` that e uses, or -1.
  static int deepest_iter(const Stage& s, const Expr& e) {
    int pos = -1;
    for (size_t i = 0; i < s.iters.size(); ++i)
      if (ir::uses_var(e, s.iters[i].var)) pos = static_cast<int>(i);
    return pos;
  }

  Stmt gen_stage(int idx, const Stage& s, std::vector<Expr> extra_guards) {
    generated_.insert(idx);
    const ir::Tensor& t = s.tensor;
    const BufferInfo& info = *buffers_[idx];
    size_t ndim = t->axes.size();
    Expr source = t->body;
    std::optional<ir::ReduceKind> combiner;
    if (auto* r = source.as<ir::ReduceNode>()) {
      combiner = r->combiner;
      source = r->source;
    }
    ir::VarMap map;
    std::vector<Expr> store_idx;
    for (size_t d = 0; d < ndim; ++d) {
      Expr local = s.axis_values[d];
      Expr global = info.offset.empty() ? local : info.offset[d] + local;
      map[t->axes[d].var] = global;
      store_idx.push_back(info.region ? local : global);
    }
    for (size_t j = 0; j < t->reduce_axes.size(); ++j) map[t->reduce_axes[j].var] = s.axis_values[ndim + j];
    Expr value = expand_inline(ir::substitute(source, map));

    // Stages attached inside this one, by loop position.
    std::vector<std::vector<int>> attached(s.iters.size());
    for (size_t i = 0; i < state_.stages().size(); ++i) {
      const Stage& a = state_.stages()[i];
      if (a.location == Location::At && a.attach_stage == s.name())
        attached[s.iter_index(a.attach_iter)].push_back(static_cast<int>(i));
    }
    // Producers first: their regions and buffers must exist before any value
    // that reads them is rebuffered.
    struct Producer {
      ir::Tensor buffer;  // null for an output, whose buffer is an argument
      Stmt nest;
      MemoryScope scope;
    };
    std::vector<std::vector<Producer>> producers(s.iters.size());
    std::vector<AttachedStage> here = in_dependency_order(place_attached(s, attached, value));
    for (const AttachedStage& a : here) {
      const Stage& ps = state_.stages()[a.stage];
      auto guards = region_guards(ps.tensor, a.region, a.local, s, a.loop);
      const size_t outer_threads = enclosing_threads_.size();
      for (int i = 0; i <= a.loop; ++i)
        if (spreads_over_threads(s.iters[i].annotation))
          enclosing_threads_.emplace_back(s.iters[i].var, Interval{0, s.iters[i].extent - 1});
      Stmt nest = gen_stage(a.stage, a.local, guards);
      enclosing_threads_.resize(outer_threads);
      producers[a.loop].push_back({a.output ? nullptr : buffers_[a.stage]->buffer, nest, scope_of(*ps.tensor)});
    }
    value = to_buffers(value);

    std::vector<Expr> guards = s.guards;
    guards.insert(guards.end(), extra_guards.begin(), extra_guards.end());
    std::vector<ForKind> kinds = loop_kinds(s);

    int first_reduce = -1;
    for (size_t i = 0; i < s.iters.size(); ++i)
      if (s.iters[i].kind == ir::IterKind::Reduce) {
        first_reduce = static_cast<int>(i);
        break;
      }

    auto wrap_guards = [&](Stmt body, int level, const std::vector<int>& loops) {
      // Guards whose innermost variable is loop `level` go just inside it.
      for (const auto& g : guards) {
        int deepest = deepest_iter(s, g);
        if (deepest == level && (level < 0 || std::find(loops.begin(), loops.end(), level) != loops.end()))
          body = make_if(g, body);
      }
      return body;
    };

    // Builds loops `loops` (positions in s.iters, outermost first) around `inner`.
    auto nest = [&](const std::vector<int>& loops, Stmt inner, bool with_producers) {
      for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
        int k = *it;
        inner = wrap_guards(inner, k, loops);
        if (with_producers && !producers[k].empty()) {
          // A shared buffer is filled by all the block's threads together:
          // none reads it before all have written, and none writes the next
          // iteration's values before all have read.
          // A producer reading an earlier one's shared buffer (layer norm's
          // squares, its mean's) waits for all of its writers first.
          bool shared = false;
          std::vector<Stmt> seq;
          std::set<const ir::TensorNode*> unsynced;  // shared buffers written since the last barrier
          for (const Producer& p : producers[k]) {
            const std::set<const ir::TensorNode*> read = buffers_read(p.nest);
            if (std::any_of(unsynced.begin(), unsynced.end(), [&](const ir::TensorNode* b) { return read.count(b); })) {
              seq.push_back(make_barrier());
              unsynced.clear();
            }
            seq.push_back(p.nest);
            if (p.buffer && p.scope == MemoryScope::Shared) {
              shared = true;
              unsynced.insert(p.buffer.get());
            }
          }
          if (shared) seq.push_back(make_barrier());
          seq.push_back(inner);
          if (shared) seq.push_back(make_barrier());
          inner = make_seq(std::move(seq));
          for (auto pit = producers[k].rbegin(); pit != producers[k].rend(); ++pit)
            if (pit->buffer) inner = make_allocate(pit->buffer, inner, pit->scope);
        }
        inner = make_for(s.iters[k].var, s.iters[k].extent, kinds[k], inner);
      }
      return inner;
    };

    Stmt body;
    std::vector<int> outer_loops;
    const int thread_reduce = combiner ? cross_thread_reduce_loop(s, first_reduce) : -1;
    if (thread_reduce >= 0) {
      // The block's threads reduce together (a reduce loop bound to
      // threadIdx.x): each its share into a register, then a tree in shared
      // memory, halving the live partial results after each barrier, and
      // thread 0 stores the result.
      for (int i = 0; i < first_reduce; ++i) outer_loops.push_back(i);
      std::vector<int> inner_loops;
      for (size_t i = first_reduce; i < s.iters.size(); ++i)
        if (static_cast<int>(i) != thread_reduce) inner_loops.push_back(static_cast<int>(i));
      const ir::Var t = s.iters[thread_reduce].var;
      const int64_t threads = s.iters[thread_reduce].extent;
      const ir::Tensor partial = ir::placeholder({threads}, s.name() + ".red", s.tensor->dtype);
      const ir::Tensor mine = ir::placeholder({1}, s.name() + ".acc", s.tensor->dtype);
      const Expr zero = ir::make_int(0);
      std::vector<Stmt> steps;
      steps.push_back(make_store(mine, {zero}, ir::reduce_identity(*combiner, s.tensor->dtype)));
      Stmt update = nest(inner_loops, make_store(mine, {zero}, ir::reduce_combine(*combiner, ir::load(mine, {zero}), value)), true);
      steps.push_back(wrap_guards(update, thread_reduce, {thread_reduce}));
      steps.push_back(make_store(partial, {Expr(t)}, ir::load(mine, {zero})));
      steps.push_back(make_barrier());
      int64_t half = 1;
      while (half < threads) half *= 2;
      for (int64_t h = half / 2; h >= 1; h /= 2) {
        const Expr other = Expr(t) + ir::make_int(h);
        steps.push_back(make_if(Expr(t) < ir::make_int(h) && other < ir::make_int(threads),
                                make_store(partial, {Expr(t)}, ir::reduce_combine(*combiner, ir::load(partial, {Expr(t)}),
                                                                                   ir::load(partial, {other})))));
        steps.push_back(make_barrier());
      }
      steps.push_back(make_if(Expr(t) == zero, make_store(info.buffer, store_idx, ir::load(partial, {zero}))));
      Stmt per_thread = make_allocate(mine, make_seq(std::move(steps)), MemoryScope::Local);
      Stmt reduce = make_allocate(partial, make_for(t, threads, ForKind::ThreadX, per_thread), MemoryScope::Shared);
      body = nest(outer_loops, reduce, true);
    } else if (!combiner) {
      for (size_t i = 0; i < s.iters.size(); ++i) outer_loops.push_back(static_cast<int>(i));
      body = nest(outer_loops, make_store(info.buffer, store_idx, value), true);
    } else {
      if (first_reduce < 0) first_reduce = static_cast<int>(s.iters.size());
      std::vector<int> init_loops, update_loops;
      for (int i = 0; i < first_reduce; ++i) outer_loops.push_back(i);
      for (size_t i = first_reduce; i < s.iters.size(); ++i) {
        update_loops.push_back(static_cast<int>(i));
        if (s.iters[i].kind == ir::IterKind::Spatial) init_loops.push_back(static_cast<int>(i));
      }
      Stmt init = nest(init_loops, make_store(info.buffer, store_idx, ir::reduce_identity(*combiner, info.buffer->dtype)), false);
      Expr current = ir::load(info.buffer, store_idx);
      Stmt update = nest(update_loops, make_store(info.buffer, store_idx, ir::reduce_combine(*combiner, current, value)), true);
      body = nest(outer_loops, make_seq({init, update}), true);
    }
    return wrap_guards(body, -1, {});
  }

  // The reduce loop of a reduction bound to threadIdx.x, when every loop
  // from its first reduce loop in is a reduce loop (the threads combine one
  // output's partial results); else -1.
  // Throws when a reduce loop is bound there with a spatial loop inside the
  // reduction (the threads would race on its outputs).
  static int cross_thread_reduce_loop(const Stage& s, int first_reduce) {
    if (first_reduce < 0) return -1;
    int bound = -1;
    bool spatial_inside = false;
    for (size_t i = first_reduce; i < s.iters.size(); ++i) {
      spatial_inside |= s.iters[i].kind != ir::IterKind::Reduce;
      if (s.iters[i].kind == ir::IterKind::Reduce && s.iters[i].annotation == schedule::Annotation::ThreadX)
        bound = static_cast<int>(i);
    }
    if (bound >= 0 && spatial_inside)
      throw Error("stage " + s.name() + ": reduce loop " + s.iters[bound].name +
                  " is bound to threadIdx.x with a spatial loop inside the reduction; a cross-thread reduction "
                  "needs its spatial loops outside");
    return bound;
  }

  // Loop kinds from annotations, then auto_unroll_max_step unrolls the
  // innermost plain loops while their total trip count stays within it.
  // The loops of a tensor-core tile stay whole (one instruction sequence of
  // a warp) and count as one trip: the loops around them unroll, so that
  // the tiles' fragments are registers.
  static std::vector<ForKind> loop_kinds(const Stage& s) {
    std::vector<ForKind> kinds;
    for (const auto& it : s.iters) kinds.push_back(for_kind(it.annotation));
    int last = static_cast<int>(s.iters.size()) - 1;
    for (int i = 0; i <= last; ++i)
      if (kinds[i] == ForKind::TensorCore) last = i - 1;
    if (s.auto_unroll_max_step > 0) {
      int64_t trips = 1;
      for (int i = last; i >= 0; --i) {
        if (s.iters[i].extent > s.auto_unroll_max_step / trips) break;  // trips * extent > max, unoverflowed
        trips *= s.iters[i].extent;
        if (kinds[i] == ForKind::Parallel || schedule::is_gpu_binding(s.iters[i].annotation)) break;
        if (kinds[i] == ForKind::Serial) kinds[i] = ForKind::Unrolled;
      }
    }
    return kinds;
  }

  const State& state_;
  std::vector<std::optional<BufferInfo>> buffers_;
  std::set<int> generated_;
  // The thread-bound loops (threadIdx, vthread) of the stages whose
  // attached stage is being generated, outermost first.
  std::vector<std::pair<ir::Var, Interval>> enclosing_threads_;
};

bool log_enabled() {
  const char* v = std::getenv("TESSERA_LOG");
  return v && std::string(v).find("lower") != std::string::npos;
}

// A pass of the pipeline: a function from loop nest to loop nest.
struct Pass {
  const char* name;
  Stmt (*run)(const Stmt&);
};

// The whole pipeline, from a schedule to the IR codegen reads, in order.
// After schedule_to_loops (the Lowerer: bound inference, inlining, buffers,
// guards) come the loop passes, whose result printers and cost-model features
// read (the loops as scheduled); code generators add the codegen passes: loops
// partitioned so guards leave the steady state, unrolled loops expanded (so
// padding checks fold to constants and taps that only add zero disappear),
// sums over padding skipped.
constexpr Pass kLoopPasses[] = {
    {"simplify", [](const Stmt& s) { return simplify(s); }},
};
constexpr Pass kCodegenPasses[] = {
    {"partition_loops", [](const Stmt& s) { return partition_loops(s); }},
    {"unroll", [](const Stmt& s) { return unroll_loops(s); }},
    {"simplify", [](const Stmt& s) { return simplify(s); }},
    {"skip_padding", [](const Stmt& s) { return skip_padding(s); }},
};
constexpr Pass kGpuCodegenPasses[] = {
    {"stage_fetches", [](const Stmt& s) { return stage_fetches(s); }},
    {"pipeline_fetches", [](const Stmt& s) { return pipeline_fetches(s); }},
    {"unroll", [](const Stmt& s) { return unroll_loops(s); }},
    {"simplify", [](const Stmt& s) { return simplify(s); }},
};

// Runs `passes` on f, each followed by the verifier; with TESSERA_LOG=lower
// each result is printed.
template <size_t N>
LoweredFunc run_passes(LoweredFunc f, const Pass (&passes)[N]) {
  const bool log = log_enabled();
  for (const Pass& pass : passes) {
    f.body = pass.run(f.body);
    if (log) std::cerr << "[lower] after " << pass.name << ":\n" << to_string(f) << "\n";
    try {
      verify(f);
    } catch (const Error& e) {
      throw Error(std::string("after lowering pass ") + pass.name + ": " + e.what());
    }
  }
  return f;
}

}  // namespace

LoweredFunc lower(const State& state, const std::string& name) {
  LoweredFunc f = Lowerer(state).run(name);
  if (log_enabled()) std::cerr << "[lower] after schedule_to_loops:\n" << to_string(f) << "\n";
  return run_passes(std::move(f), kLoopPasses);
}

LoweredFunc prepare_for_codegen(LoweredFunc f) { return run_passes(std::move(f), kCodegenPasses); }
LoweredFunc prepare_for_gpu_codegen(LoweredFunc f) { return run_passes(std::move(f), kGpuCodegenPasses); }

LoweredFunc lower(const ir::ComputeDAG& dag, const schedule::Trace& trace, const std::string& name) {
  return lower(trace.replay(dag), name);
}

}  // namespace tessera::tir
