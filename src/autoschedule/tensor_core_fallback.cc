#include "autoschedule/tensor_core_fallback.h"

#include <algorithm>

#include "autoschedule/generate_sketches.h"
#include "autoschedule/gpu_sketch_rules.h"
#include "schedule/gpu_schedule.h"
#include "schedule/iter_names.h"
#include "tir/arith.h"
#include "tir/hand_written_schedule.h"
#include "tir/simplify.h"

namespace tessera::autoschedule {

namespace {

// The largest of `choices` that divides `extent` (1 divides every extent).
int64_t largest_dividing(int64_t extent, std::initializer_list<int64_t> choices) {
  for (int64_t c : choices)
    if (extent % c == 0) return c;
  return 1;
}

// Whether the product's operand `operand` is read as stored rows: a
// placeholder, or a view whose value is one read of a placeholder at a flat
// index of the view's last axis plus multiples of `lanes` (its other axes'
// strides and its offset): then a fetch of `lanes` elements a thread copies
// aligned 16-byte pieces of rows. A convolution's weights (OHWI) are such
// rows; its padded window is not (a select), nor is a transposed operand.
bool reads_aligned_rows(const ir::Tensor& operand, int64_t lanes) {
  if (operand->is_placeholder()) return operand->shape.back() % lanes == 0;
  const auto* load = operand->body.as<ir::TensorLoadNode>();
  if (!load || !load->tensor->is_placeholder()) return false;
  ir::Expr flat = ir::make_int(0);
  int64_t stride = 1;
  for (size_t d = load->indices.size(); d-- > 0;) {
    flat = flat + load->indices[d] * ir::make_int(stride);
    stride *= load->tensor->shape[d];
  }
  const tir::LinearForm form = tir::linear_form(tir::simplify(flat));
  if (form.constant % lanes != 0) return false;
  bool row = false;
  for (const auto& [atom, coef] : form.terms) {
    const auto* var = atom.as<ir::VarNode>();
    const auto axis = std::find_if(operand->axes.begin(), operand->axes.end(),
                                   [&](const ir::IterVar& a) { return var && a.var.same_as(atom); });
    if (axis == operand->axes.end()) return false;  // a quotient, a remainder: no row
    if (axis + 1 == operand->axes.end()) row = coef == 1;
    else if (coef % lanes != 0) return false;
  }
  return row;
}

}  // namespace

std::optional<TensorCoreFallback> tensor_core_fallback(const ir::ComputeDAG& dag, const target::Target& target) {
  // (Cheap refusals first: every GPU build asks for each of its kernels.)
  if (target.kind != "cuda" || target.gpu.arch < 80) return std::nullopt;
  const auto placeholders = dag.placeholders();
  if (!target.tf32 && std::none_of(placeholders.begin(), placeholders.end(),
                                   [](const ir::Tensor& p) { return p->dtype == ir::DType::Float16; }))
    return std::nullopt;
  // One product and its epilogue: the numbers below are a product's tiles.
  // A DAG of several reductions (attention's products, maxima and sums) has
  // sketches whose other stages' tiles they do not cover, and its own
  // hand-written schedule.
  const auto& tensors = dag.tensors();
  if (std::count_if(tensors.begin(), tensors.end(), [](const ir::Tensor& t) { return t->is_reduction(); }) != 1)
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
    // 16-byte fetches of operands read as stored rows and of an NHWC
    // window; the others (an NCHW window) one element a lane, coalesced
    // across the lanes.
    f.params.vectorize.assign(sketch.vectorize.size(), 0);
    // Each step's fetches awaited before it computes (other blocks hide
    // their latency): the kernels the untuned rule was measured with.
    f.params.pipeline.assign(sketch.pipeline.size(), 0);
    for (const SketchStep& step : sketch.steps) {
      const auto* fetch = std::get_if<FetchSplit>(&step);
      if (!fetch || fetch->vector_site < 0) continue;
      for (const ir::Tensor& t : dag.tensors())
        if (schedule::cache_read_name(t->name) == fetch->stage &&
            (reads_aligned_rows(t, fetch->lanes) || schedule::nhwc_window_rows(t, fetch->lanes)))
          f.params.vectorize[fetch->vector_site] = 1;
    }
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
