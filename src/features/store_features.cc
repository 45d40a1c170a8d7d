#include "features/store_features.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "features/access_analysis.h"
#include "ir/functor.h"

namespace tessera::features {
namespace {

using tir::ForKind;

constexpr double kCacheLineBytes = 64;

struct Allocation {
  double bytes = 0;
  double times = 0;  // iterations of the loops around the Allocate
};

struct Walker {
  std::vector<Loop> loops;
  std::unordered_map<const ir::TensorNode*, Allocation> allocations;
  int guards = 0;
  std::vector<std::vector<float>> out;

  void walk(const tir::Stmt& s) {
    if (!s) return;
    if (auto* f = tir::as<tir::ForNode>(s)) {
      loops.push_back({f->var, f->extent, f->for_kind});
      walk(f->body);
      loops.pop_back();
    } else if (auto* st = tir::as<tir::StoreNode>(s)) {
      out.push_back(features_of(st));
    } else if (auto* a = tir::as<tir::AllocateNode>(s)) {
      double elements = 1;
      for (int64_t d : a->buffer->shape) elements *= static_cast<double>(d);
      allocations[a->buffer.get()] = {elements * static_cast<double>(ir::size_in_bytes(a->buffer->dtype)), iterations(0)};
      walk(a->body);
    } else if (auto* i = tir::as<tir::IfThenElseNode>(s)) {
      ++guards;
      walk(i->then_case);
      walk(i->else_case);
      --guards;
    } else if (auto* q = tir::as<tir::SeqNode>(s)) {
      for (const auto& c : q->stmts) walk(c);
    }
  }

  // Product of the extents of loops[from..].
  double iterations(size_t from) const {
    double n = 1;
    for (size_t j = from; j < loops.size(); ++j) n *= static_cast<double>(loops[j].extent);
    return n;
  }

  std::vector<float> features_of(const tir::StoreNode* store) const {
    std::vector<float> v(kStoreFeatureLength, 0.0f);
    const double iters = iterations(0);
    const size_t depth = loops.size();
    float* p = v.data();

    // Group 1: computation.
    double ops[6] = {0, 0, 0, 0, 0, 0};
    ir::post_order_visit(store->value, [&](const ir::Expr& e) {
      const bool fp = e.dtype() == ir::DType::Float32;
      switch (e.kind()) {
        case ir::ExprKind::Add:
        case ir::ExprKind::Sub: ops[0] += fp; break;
        case ir::ExprKind::Mul: ops[1] += fp; break;
        case ir::ExprKind::Div: ops[2] += fp; break;
        case ir::ExprKind::Min:
        case ir::ExprKind::Max: ops[3] += fp; break;
        case ir::ExprKind::EQ: case ir::ExprKind::NE: case ir::ExprKind::LT:
        case ir::ExprKind::LE: case ir::ExprKind::GT: case ir::ExprKind::GE:
        case ir::ExprKind::Select: ops[4] += 1; break;
        case ir::ExprKind::Call: ops[5] += 1; break;
        default: break;
      }
    });
    double flops_per_iteration = 0;
    for (int k = 0; k < 6; ++k) {
      p[k] = lg(ops[k] * iters);
      flops_per_iteration += ops[k];
    }
    const ForKind kinds[3] = {ForKind::Vectorized, ForKind::Unrolled, ForKind::Parallel};
    for (int k = 0; k < 3; ++k) {
      double product = 1, count = 0;
      for (const Loop& l : loops)
        if (l.kind == kinds[k]) {
          product *= static_cast<double>(l.extent);
          ++count;
        }
      p[6 + 3 * k] = count > 0 ? lg(product) : 0.0f;
      p[7 + 3 * k] = static_cast<float>(count);
      p[8 + 3 * k] = depth > 0 && loops.back().kind == kinds[k] ? 1.0f : 0.0f;
    }
    p += kComputeFeatures;

    // Group 2: buffer access.
    std::vector<Access> accesses = collect_accesses(store);
    std::vector<std::vector<AccessStats>> stats(accesses.size());  // [access][loop]
    for (size_t a = 0; a < accesses.size(); ++a)
      for (size_t d = 0; d < depth; ++d) stats[a].push_back(access_stats(accesses[a], loops, d));
    auto whole_nest_bytes = [&](size_t a) {
      return depth > 0 ? stats[a][0].touched_bytes : static_cast<double>(ir::size_in_bytes(accesses[a].buffer->dtype));
    };
    // Distinct bytes of every buffer under loop d (d == depth: one iteration).
    auto bytes_under = [&](size_t d) {
      double total = 0;
      for (size_t a = 0; a < accesses.size(); ++a)
        total += d < depth ? stats[a][d].touched_bytes : static_cast<double>(ir::size_in_bytes(accesses[a].buffer->dtype));
      return total;
    };
    std::vector<size_t> order(accesses.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      if (accesses[x].written != accesses[y].written) return accesses[x].written;
      if (whole_nest_bytes(x) != whole_nest_bytes(y)) return whole_nest_bytes(x) > whole_nest_bytes(y);
      return accesses[x].buffer->name < accesses[y].buffer->name;
    });
    for (size_t slot = 0; slot < order.size() && slot < static_cast<size_t>(kStoreBuffers); ++slot) {
      const size_t a = order[slot];
      const Access& acc = accesses[a];
      const double elem = static_cast<double>(ir::size_in_bytes(acc.buffer->dtype));
      float* q = p + slot * kPerStoreBuffer;
      q[0] = acc.written ? 1.0f : 0.0f;
      q[1] = acc.read ? 1.0f : 0.0f;
      q[2] = lg(iters * elem);
      q[3] = lg(whole_nest_bytes(a));
      double lines = iters, stride = 0;
      if (depth > 0) {
        stride = std::abs(stats[a][depth - 1].stride);
        const double inner = static_cast<double>(std::max<int64_t>(1, loops.back().extent));
        const double per_line = stride * elem >= kCacheLineBytes ? inner : std::max(1.0, inner * stride * elem / kCacheLineBytes);
        lines = iters / inner * per_line;
      }
      q[4] = lg(lines);
      q[5] = lg(std::max(1.0, whole_nest_bytes(a) / kCacheLineBytes));
      int reuse_loop = -1;
      for (size_t d = depth; d-- > 0;) {
        if (loops[d].extent <= 1) continue;
        bool used = false;
        for (const auto& idx : acc.indices) used = used || ir::uses_var(idx, loops[d].var);
        if (!used) {
          reuse_loop = static_cast<int>(d);
          break;
        }
      }
      if (reuse_loop >= 0) {
        q[6] = 1;
        const auto d = static_cast<size_t>(reuse_loop);
        q[9] = lg(iterations(d + 1));
        q[10] = lg(bytes_under(d + 1));
        q[11] = lg(static_cast<double>(loops[d].extent));
      } else if (acc.written && acc.read) {
        q[7] = 1;
      } else {
        q[8] = 1;
      }
      q[12] = lg(stride);
      q[13] = depth > 0 && stats[a][depth - 1].nonlinear ? 1.0f : 0.0f;
    }
    p += kStoreBuffers * kPerStoreBuffer;

    // Group 3: arithmetic intensity curve.
    for (int k = 0; k < kIntensitySamples && depth > 0; ++k) {
      const size_t from_inner = depth == 1 ? 0
                                           : static_cast<size_t>(std::lround(static_cast<double>(k) * (depth - 1) /
                                                                             (kIntensitySamples - 1)));
      const size_t d = depth - 1 - from_inner;
      p[k] = lg(flops_per_iteration * iterations(d) / std::max(1.0, bytes_under(d)));
    }
    p += kIntensitySamples;

    // Group 4: allocation.
    auto alloc = allocations.find(store->buffer.get());
    if (alloc != allocations.end()) {
      p[0] = lg(alloc->second.bytes);
      p[1] = lg(alloc->second.times);
      p[2] = 1;
    }
    p += kAllocationFeatures;

    // Group 5: outer scope.
    p[0] = lg(iters);
    p[1] = static_cast<float>(depth);
    p[2] = guards > 0 ? 1.0f : 0.0f;

    for (float& x : v)
      if (!std::isfinite(x)) x = 0;
    return v;
  }
};

}  // namespace

std::vector<std::vector<float>> store_features(const tir::LoweredFunc& f) {
  Walker w;
  w.walk(f.body);
  // Group 6: how the GPU runs the function, the same for each store.
  const std::vector<float> gpu = gpu_features(f);
  for (auto& row : w.out) std::copy(gpu.begin(), gpu.end(), row.end() - kGpuLength);
  return std::move(w.out);
}

}  // namespace tessera::features
