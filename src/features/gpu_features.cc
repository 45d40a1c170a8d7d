#include "features/gpu_features.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "features/access_analysis.h"
#include "ir/functor.h"
#include "tir/device_program.h"
#include "tir/stmt_functor.h"

namespace tessera::features {
namespace {

using tir::ForKind;
using tir::MemoryScope;

// The SM the occupancy feature assumes (an A100-class one; the ratios, not
// the exact limits, are what a model learns from).
constexpr double kSmThreads = 2048, kSmBlocks = 32, kSmRegisters = 65536, kSmSharedBytes = 164 * 1024;

struct KernelWork {
  double threads = 1, blocks = 1, vthreads = 1, shared_bytes = 0;
  double main_iterations = 0;  // the main store's, in one thread
  double shared_accesses = 0, global_accesses = 0, local_elements = 0;
  double tensor_core_products = 0;
  double worst_conflict = 0;  // gcd(|stride|, 32) along threadIdx.x, 0 when none
  double store_stride = 0;    // the largest of device-memory stores along threadIdx.x
  bool bound = false;
  bool pipelined = false;  // a loop's fetches loaded a step ahead
  double work() const { return threads * blocks * main_iterations; }
};

class Walker {
 public:
  explicit Walker(KernelWork& w) : w_(w) {}

  void visit(const tir::Stmt& s) {
    if (!s) return;
    if (auto* f = tir::as<tir::ForNode>(s)) {
      if (f->for_kind == ForKind::TensorCore) return tensor_core_tile(*f);
      const bool bound = tir::is_block_axis(f->for_kind) || tir::is_thread_axis(f->for_kind);
      w_.bound |= bound;
      if (f->for_kind == ForKind::VThread) w_.vthreads *= static_cast<double>(f->extent);
      w_.pipelined |= f->for_kind == ForKind::Pipelined;
      loops_.push_back({f->var, f->extent, f->for_kind});
      visit(f->body);
      loops_.pop_back();
    } else if (auto* st = tir::as<tir::StoreNode>(s)) {
      store(st);
    } else if (auto* a = tir::as<tir::AllocateNode>(s)) {
      scope_[a->buffer.get()] = a->scope;
      if (a->scope == MemoryScope::Local) w_.local_elements += static_cast<double>(a->buffer->num_elements());
      // A warp's fragments: each lane holds 1/32 of them.
      if (a->scope == MemoryScope::Fragment) w_.local_elements += static_cast<double>(a->buffer->num_elements()) / 32;
      visit(a->body);
    } else if (auto* i = tir::as<tir::IfThenElseNode>(s)) {
      visit(i->then_case);
      visit(i->else_case);
    } else if (auto* q = tir::as<tir::SeqNode>(s)) {
      for (const auto& c : q->stmts) visit(c);
    }
  }

 private:
  // Iterations of the loops one thread runs itself (not the bound ones).
  double own_iterations() const {
    double n = 1;
    for (const Loop& l : loops_)
      if (!tir::is_block_axis(l.kind) && !tir::is_thread_axis(l.kind)) n *= static_cast<double>(l.extent);
    return n;
  }
  int thread_x_loop() const {
    for (size_t d = 0; d < loops_.size(); ++d)
      if (loops_[d].kind == ForKind::ThreadX) return static_cast<int>(d);
    return -1;
  }
  MemoryScope scope_of(const ir::TensorNode* t) const {
    auto it = scope_.find(t);
    return it == scope_.end() ? MemoryScope::Global : it->second;
  }

  void store(const tir::StoreNode* st) {
    const double n = own_iterations();
    const int tx = thread_x_loop();
    const std::vector<Access> accesses = collect_accesses(st);
    for (const Access& a : accesses) {
      const MemoryScope scope = scope_of(a.buffer.get());
      const double count = n * ((a.written ? 1 : 0) + (a.read ? 1 : 0));
      if (scope == MemoryScope::Shared) w_.shared_accesses += count;
      if (scope == MemoryScope::Global) w_.global_accesses += count;
      if (scope == MemoryScope::Shared && tx >= 0) {
        const double stride = std::abs(access_stats(a, loops_, static_cast<size_t>(tx)).stride);
        if (stride > 0)
          w_.worst_conflict =
              std::max(w_.worst_conflict, static_cast<double>(std::gcd(static_cast<int64_t>(stride), int64_t{32})));
      }
    }
    w_.main_iterations = std::max(w_.main_iterations, n);
    const Access& written = accesses.front();
    if (tx >= 0 && scope_of(written.buffer.get()) == MemoryScope::Global)
      w_.store_stride =
          std::max(w_.store_stride, std::abs(access_stats(written, loops_, static_cast<size_t>(tx)).stride));
  }

  // A warp's tile: one instruction sequence, not the 16 x 16 (x 16)
  // iterations its loops mean.
  void tensor_core_tile(const tir::ForNode& f) {
    const double n = own_iterations();
    const auto* columns = tir::as<tir::ForNode>(f.body);
    const bool product = columns && tir::as<tir::ForNode>(columns->body);
    if (product) w_.tensor_core_products += n;
    w_.main_iterations = std::max(w_.main_iterations, n);
    constexpr double kPerLaneElements = 8;  // of a 16 x 16 tile, over 32 lanes
    tir::visit_stmts(f.body, [&](const tir::Stmt& s) {
      auto* st = tir::as<tir::StoreNode>(s);
      if (!st) return;
      for (const Access& a : collect_accesses(st)) {
        const MemoryScope scope = scope_of(a.buffer.get());
        const double count = n * kPerLaneElements;
        if (scope == MemoryScope::Shared) w_.shared_accesses += count;
        if (scope == MemoryScope::Global) w_.global_accesses += count;
      }
    });
  }

  KernelWork& w_;
  std::vector<Loop> loops_;
  std::map<const ir::TensorNode*, MemoryScope> scope_;
};

double occupancy(const KernelWork& w) {
  const double registers = (32 + w.local_elements) * w.threads;
  double blocks = std::min(kSmBlocks, std::floor(kSmThreads / w.threads));
  if (registers > 0) blocks = std::min(blocks, std::floor(kSmRegisters / registers));
  if (w.shared_bytes > 0) blocks = std::min(blocks, std::floor(kSmSharedBytes / w.shared_bytes));
  return std::max(0.0, blocks) * w.threads / kSmThreads;
}

}  // namespace

std::vector<float> gpu_features(const tir::LoweredFunc& f) {
  std::vector<float> out(kGpuLength, 0.0f);
  tir::DeviceProgram program;
  try {
    program = tir::split_device_kernels(f);
  } catch (const std::exception&) {
    return out;  // no kernel a GPU could run: nothing to describe (the build says why)
  }
  KernelWork heaviest;
  for (const tir::DeviceKernel& k : program.kernels) {
    KernelWork w;
    w.threads = static_cast<double>(k.threads_per_block());
    w.blocks = static_cast<double>(k.grid[0] * k.grid[1] * k.grid[2]);
    w.shared_bytes = static_cast<double>(k.shared_bytes);
    Walker(w).visit(k.body);
    if (w.bound && w.work() >= heaviest.work()) heaviest = w;
  }
  if (!heaviest.bound) return out;
  out[0] = 1;
  out[1] = lg(heaviest.threads);
  out[2] = lg(heaviest.blocks);
  out[3] = lg(heaviest.vthreads);
  out[4] = lg(heaviest.shared_bytes);
  out[5] = lg(heaviest.shared_accesses);
  out[6] = lg(heaviest.global_accesses);
  out[7] = heaviest.worst_conflict > 0 ? static_cast<float>(std::log2(heaviest.worst_conflict)) : 0.0f;
  out[8] = lg(heaviest.store_stride);
  out[9] = static_cast<float>(occupancy(heaviest));
  out[10] = lg(heaviest.local_elements);
  out[11] = lg(heaviest.tensor_core_products);
  out[12] = heaviest.pipelined ? 1.0f : 0.0f;
  for (float& x : out)
    if (!std::isfinite(x)) x = 0;
  return out;
}

}  // namespace tessera::features
