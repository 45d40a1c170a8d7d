#include "autoschedule/tensor_core_fallback.h"

#include <algorithm>

#include "autoschedule/generate_sketches.h"
#include "autoschedule/gpu_sketch_rules.h"
#include "schedule/gpu_schedule.h"
#include "tir/hand_written_schedule.h"

namespace tessera::autoschedule {

namespace {

// The largest of `choices` that divides `extent` (1 divides every extent).
int64_t largest_dividing(int64_t extent, std::initializer_list<int64_t> choices) {
  for (int64_t c : choices)
    if (extent % c == 0) return c;
  return 1;
}

}  // namespace

std::optional<TensorCoreFallback> tensor_core_fallback(const ir::ComputeDAG& dag, const target::Target& target) {
  // (Cheap refusals first: every GPU build asks for each of its kernels.)
  if (target.kind != "cuda" || target.gpu.arch < 80) return std::nullopt;
  const auto placeholders = dag.placeholders();
  if (!target.tf32 && std::none_of(placeholders.begin(), placeholders.end(),
                                   [](const ir::Tensor& p) { return p->dtype == ir::DType::Float16; }))
    return std::nullopt;
  for (Sketch& sketch : generate_sketches(dag, SketchContext{target, 1})) {
    if (!is_tensor_core_sketch(sketch) || is_split_k_sketch(sketch)) continue;  // the product whole
    TensorCoreFallback f;
    f.blocks = f.reduce = 1;
    for (const TileSlot& slot : sketch.tiles) {
      if (slot.reduce) {  // 16-deep tiles: [tiles staged a step]
        f.params.tiles.push_back({largest_dividing(slot.extent, {2})});
        f.reduce *= 16 * slot.extent;
      } else {  // 16-wide tiles: [warps, fragments per warp]; the rows', then the columns'
        f.columns = 16 * slot.extent;
        const int64_t warps = largest_dividing(slot.extent, {2});
        const int64_t fragments = largest_dividing(slot.extent / warps, {2});
        f.params.tiles.push_back({warps, fragments});
        f.blocks *= slot.extent / warps / fragments;
      }
    }
    f.params.unroll.assign(sketch.unroll.size(), 0);
    if (!sketch.unroll.empty()) f.params.unroll[0] = 64;  // a step's multiplications (the accumulation's site)
    f.params.vectorize.assign(sketch.vectorize.size(), 0);
    // A batched product's blocks run along its batch too (the block loop
    // fuses it); a convolution's images are among the product's columns.
    for (const ir::Tensor& t : dag.tensors())
      if (t->is_reduction())
        for (size_t d = 0; d + 2 < t->shape.size(); ++d) f.blocks *= t->shape[d];
    f.sketch = std::move(sketch);
    return f;
  }
  return std::nullopt;
}

bool tensor_core_fallback_pays(const TensorCoreFallback& f) {
  return f.blocks >= schedule::kSplitReductionBlocks || f.reduce <= kShortTensorCoreReduce ||
         (f.blocks >= kTensorCoreWaveBlocks && f.reduce <= kMediumTensorCoreReduce) ||
         (f.columns <= kNarrowTensorCoreColumns && f.reduce <= kNarrowTensorCoreReduce);
}

schedule::Trace untuned_schedule(const ir::ComputeDAG& dag, const target::Target& target) {
  if (const std::optional<TensorCoreFallback> f = tensor_core_fallback(dag, target); f && tensor_core_fallback_pays(*f))
    return instantiate(f->sketch, f->params);
  return tir::hand_written_schedule(dag, target);
}

}  // namespace tessera::autoschedule
