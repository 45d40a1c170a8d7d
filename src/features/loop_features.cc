#include "features/loop_features.h"

#include <algorithm>
#include <cmath>

#include "features/access_analysis.h"

namespace tessera::features {
namespace {

using tir::ForKind;

struct Nest {
  std::vector<Loop> loops;                      // outermost first
  std::vector<Access> accesses;                 // sorted, at most kBufferSlots
  std::vector<std::vector<AccessStats>> stats;  // [loop][buffer]
  double iterations = 0;                        // of the main store
  double other_iterations = 0;                  // of every other store together
  int num_stores = 0;
};

// Finds the most executed store and the loops around it.
void find_main_store(const tir::Stmt& s, std::vector<Loop>& stack, Nest& nest, const tir::StoreNode*& best) {
  if (!s) return;
  if (auto* f = tir::as<tir::ForNode>(s)) {
    stack.push_back({f->var, f->extent, f->for_kind});
    find_main_store(f->body, stack, nest, best);
    stack.pop_back();
  } else if (auto* st = tir::as<tir::StoreNode>(s)) {
    double iters = 1;
    for (const Loop& l : stack) iters *= static_cast<double>(l.extent);
    ++nest.num_stores;
    nest.other_iterations += iters;
    if (!best || iters > nest.iterations) {
      best = st;
      nest.iterations = iters;
      nest.loops = stack;
    }
  } else if (auto* a = tir::as<tir::AllocateNode>(s)) {
    find_main_store(a->body, stack, nest, best);
  } else if (auto* i = tir::as<tir::IfThenElseNode>(s)) {
    find_main_store(i->then_case, stack, nest, best);
    find_main_store(i->else_case, stack, nest, best);
  } else if (auto* q = tir::as<tir::SeqNode>(s)) {
    for (const auto& c : q->stmts) find_main_store(c, stack, nest, best);
  }
}

Nest analyse(const tir::LoweredFunc& f) {
  Nest nest;
  std::vector<Loop> stack;
  const tir::StoreNode* store = nullptr;
  find_main_store(f.body, stack, nest, store);
  if (!store) return nest;
  nest.other_iterations -= nest.iterations;

  std::vector<Access> accesses = collect_accesses(store);
  // Sort by bytes touched by the whole nest, largest first; names break ties.
  std::vector<std::pair<double, size_t>> order;
  for (size_t i = 0; i < accesses.size(); ++i) {
    double bytes = nest.loops.empty() ? 0 : access_stats(accesses[i], nest.loops, 0).touched_bytes;
    order.push_back({bytes, i});
  }
  std::stable_sort(order.begin(), order.end(), [&](const auto& x, const auto& y) {
    if (x.first != y.first) return x.first > y.first;
    return accesses[x.second].buffer->name < accesses[y.second].buffer->name;
  });
  for (size_t i = 0; i < order.size() && i < static_cast<size_t>(kBufferSlots); ++i)
    nest.accesses.push_back(accesses[order[i].second]);

  for (size_t d = 0; d < nest.loops.size(); ++d) {
    std::vector<AccessStats> row;
    for (const Access& a : nest.accesses) row.push_back(access_stats(a, nest.loops, d));
    nest.stats.push_back(std::move(row));
  }
  return nest;
}

void make_finite(std::vector<float>& v) {
  for (float& x : v)
    if (!std::isfinite(x)) x = 0;
}

int kind_slot(ForKind k) {
  switch (k) {
    case ForKind::Parallel: return 1;
    case ForKind::Vectorized: return 2;
    case ForKind::Unrolled: return 3;
    default: return 0;  // serial, and GPU bindings (gpu_features describes those)
  }
}

void append_gpu_features(const tir::LoweredFunc& f, std::vector<float>& out) {
  const std::vector<float> gpu = gpu_features(f);
  std::copy(gpu.begin(), gpu.end(), out.end() - kGpuLength);
}

// Piecewise-linear value at x of points sorted by x (ties: the later point wins).
float interpolate(const std::vector<std::pair<double, float>>& pts, double x) {
  if (x <= pts.front().first) return pts.front().second;
  if (x >= pts.back().first) return pts.back().second;
  for (size_t j = 1; j < pts.size(); ++j) {
    if (pts[j].first < x) continue;
    double x0 = pts[j - 1].first, x1 = pts[j].first;
    if (x1 - x0 < 1e-9) return pts[j].second;
    double t = (x - x0) / (x1 - x0);
    return static_cast<float>(pts[j - 1].second + t * (pts[j].second - pts[j - 1].second));
  }
  return pts.back().second;
}

}  // namespace

std::vector<float> itervar_features(const tir::LoweredFunc& f) {
  std::vector<float> out(kItervarLength, 0.0f);
  Nest nest = analyse(f);
  out[0] = lg(nest.iterations);
  out[1] = lg(nest.other_iterations);
  out[2] = static_cast<float>(nest.num_stores);
  out[3] = static_cast<float>(nest.loops.size());
  const size_t depth = nest.loops.size();
  for (size_t slot = 0; slot < static_cast<size_t>(kItervarLoops) && slot < depth; ++slot) {
    size_t d = depth - 1 - slot;  // innermost first
    const Loop& loop = nest.loops[d];
    float* p = out.data() + kItervarHeader + slot * kPerLoop;
    double outer = 1;
    for (size_t j = 0; j < d; ++j) outer *= static_cast<double>(nest.loops[j].extent);
    p[0] = 1;
    p[1] = lg(static_cast<double>(loop.extent));
    p[2 + kind_slot(loop.kind)] = 1;
    p[6] = lg(outer);
    for (size_t b = 0; b < nest.accesses.size(); ++b) {
      const AccessStats& s = nest.stats[d][b];
      float* q = p + 7 + b * kPerBuffer;
      q[0] = lg(std::abs(s.stride));
      q[1] = s.nonlinear ? 1.0f : 0.0f;
      q[2] = lg(s.touched_bytes);
      q[3] = lg(s.reuse);
      q[4] = nest.accesses[b].written ? 1.0f : 0.0f;
    }
  }
  append_gpu_features(f, out);
  make_finite(out);
  return out;
}

std::vector<float> curve_features(const tir::LoweredFunc& f) {
  std::vector<float> out(kCurveLength, 0.0f);
  Nest nest = analyse(f);
  const size_t depth = nest.loops.size();
  // x of each loop: log2 of the iterations under it (innermost loop first).
  std::vector<double> xs;
  double acc = 0;
  for (size_t d = depth; d-- > 0;) {
    acc += std::log2(static_cast<double>(std::max<int64_t>(1, nest.loops[d].extent)));
    xs.push_back(acc);
  }
  // The loop "covering" x: the innermost loop whose x reaches it.
  auto covering = [&](double x) -> size_t {
    for (size_t i = 0; i < xs.size(); ++i)
      if (xs[i] >= x) return depth - 1 - i;
    return 0;
  };
  int pos = 0;
  for (size_t b = 0; b < static_cast<size_t>(kBufferSlots); ++b) {
    std::vector<std::pair<double, float>> touched, reuse;
    if (b < nest.accesses.size()) {
      // x = 0: a single iteration touches one element and reuses nothing.
      touched.push_back({0.0, lg(static_cast<double>(ir::size_in_bytes(nest.accesses[b].buffer->dtype)))});
      reuse.push_back({0.0, lg(1.0)});
      for (size_t i = 0; i < xs.size(); ++i) {
        const AccessStats& s = nest.stats[depth - 1 - i][b];
        touched.push_back({xs[i], lg(s.touched_bytes)});
        reuse.push_back({xs[i], lg(s.reuse)});
      }
    }
    for (int k = 0; k < kCurveSamples; ++k) {
      double x = 2.5 * k;
      bool have = b < nest.accesses.size();
      out[pos + k] = have ? interpolate(touched, x) : 0.0f;
      out[pos + kCurveSamples + k] = have ? interpolate(reuse, x) : 0.0f;
      out[pos + 2 * kCurveSamples + k] = have && depth > 0 ? lg(std::abs(nest.stats[covering(x)][b].stride)) : 0.0f;
    }
    pos += 3 * kCurveSamples;
  }
  for (int k = 0; k < kCurveSamples && depth > 0; ++k) {
    ForKind kind = nest.loops[covering(2.5 * k)].kind;
    out[pos + k] = kind == ForKind::Vectorized ? 1.0f : 0.0f;
    out[pos + kCurveSamples + k] = kind == ForKind::Unrolled ? 1.0f : 0.0f;
    out[pos + 2 * kCurveSamples + k] = kind == ForKind::Parallel ? 1.0f : 0.0f;
  }
  pos += 3 * kCurveSamples;
  out[pos] = lg(nest.other_iterations);
  append_gpu_features(f, out);
  make_finite(out);
  return out;
}

}  // namespace tessera::features
