#include "autoschedule/gpu_sketch_rules.h"

#include <algorithm>
#include <optional>
#include <set>

#include "autoschedule/stage_analysis.h"
#include "ir/functor.h"
#include "schedule/gpu_schedule.h"
#include "schedule/iter_names.h"
#include "schedule/stage_steps.h"

namespace tessera::autoschedule {

using schedule::Annotation;
using schedule::split_part;

SketchRule::Condition CrossThreadReduction::condition(const SketchContext&, const SketchBuilder& b, int stage) const {
  const auto& state = b.state();
  const schedule::Stage& s = b.stage(stage);
  if (!s.tensor->is_reduction() || !untouched(s) || needs_multi_level_tiling(state, stage)) return Condition::Pass;
  return spatial_length(state, stage) <= schedule::kCrossThreadMaxOutputs &&
                 reduce_length(state, stage) >= schedule::kCrossThreadMinReduce
             ? Condition::Apply
             : Condition::Pass;
}

std::vector<std::pair<SketchBuilder, int>> CrossThreadReduction::apply(const SketchContext&, const SketchBuilder& b,
                                                                       int stage) const {
  SketchBuilder n = b;
  const std::string s = b.stage(stage).name();
  const auto sp = names_of(b.stage(stage), ir::IterKind::Spatial), rd = names_of(b.stage(stage), ir::IterKind::Reduce);
  const std::string r = n.fuse(s, rd);
  // Lengths (threads, per step): the reduction runs r.0, then r.2 within
  // each thread's step, r.1 across the threads.
  const int slot = n.tile(s, r, 2);
  n.add(schedule::ReorderStep{s, concat({sp, {split_part(r, 1), split_part(r, 0), split_part(r, 2)}})});
  if (!sp.empty()) {
    const std::string outputs = n.fuse(s, sp);
    n.add(schedule::AnnotateStep{s, outputs, Annotation::BlockX});
  }
  n.add(schedule::AnnotateStep{s, split_part(r, 1), Annotation::ThreadX});
  n.add_block(BlockThreads{{{slot, 0}}});
  n.sites().unroll.push_back({s, split_part(r, 0)});
  n.mark_structured(s);
  n.note(s + ": cross-thread reduction over " + r);
  return {{std::move(n), stage - 1}};
}

namespace {

// What TensorCoreTiling and SplitK note in a sketch's rules (is_tensor_core_sketch, is_split_k_sketch read it).
constexpr const char* kTensorCoreTilingNote = "tensor-core tiling";
constexpr const char* kSplitKNote = "split-K";

// Threads of a warp: a tensor-core block's x extent.
constexpr int64_t kWarpLanes = 32;
constexpr int64_t kTile = 16;

// An input's values as stored in `dtype`: a placeholder of it, or a stage
// that only copies one (batch_matmul's transposed B, a convolution's im2col
// columns), padded with zeros or not. (Fetched into shared memory, such a
// copy is read through; anything that computes is not an operand.)
bool holds_stored(const ir::Tensor& t, ir::DType dtype);
bool stored_value(const ir::Expr& e, ir::DType dtype) {
  if (const auto* load = e.as<ir::TensorLoadNode>()) return holds_stored(load->tensor, dtype);
  if (const auto* s = e.as<ir::SelectNode>())
    return stored_value(s->true_value, dtype) && stored_value(s->false_value, dtype);
  const auto* c = e.as<ir::FloatImmNode>();
  return c && c->value == 0;
}
bool holds_stored(const ir::Tensor& t, ir::DType dtype) {
  if (t->is_placeholder()) return t->dtype == dtype;
  return !t->is_reduction() && stored_value(t->body, dtype);
}
// Values exactly representable in fp16: copies of half-storage inputs.
bool holds_halves(const ir::Tensor& t) { return holds_stored(t, ir::DType::Float16); }

// The matrix product C(.., i, j) = sum over k of A(.., i, k) * B(.., k, j)
// a stage computes, with its operands in the order (rows, columns): the
// loads of its body, or nothing.
struct MatrixProduct {
  const ir::TensorLoadNode* a = nullptr;
  const ir::TensorLoadNode* b = nullptr;
};
std::optional<MatrixProduct> matrix_product(const ir::Tensor& t) {
  const auto* r = t->body.as<ir::ReduceNode>();
  if (!r || r->combiner != ir::ReduceKind::Sum || r->axes.size() != 1 || t->axes.size() < 2) return std::nullopt;
  const auto* mul = r->source.as<ir::BinaryNode>();
  if (!mul || mul->kind != ir::ExprKind::Mul) return std::nullopt;
  MatrixProduct p{mul->a.as<ir::TensorLoadNode>(), mul->b.as<ir::TensorLoadNode>()};
  if (!p.a || !p.b) return std::nullopt;
  const ir::Var& i = t->axes[t->axes.size() - 2].var;
  const ir::Var& j = t->axes.back().var;
  const ir::Var& k = r->axes[0].var;
  auto uses = [](const ir::TensorLoadNode* l, const ir::Var& v) {
    for (const auto& e : l->indices)
      if (ir::uses_var(e, v)) return true;
    return false;
  };
  if (uses(p.a, j)) std::swap(p.a, p.b);
  if (uses(p.a, j) || uses(p.b, i) || !uses(p.a, i) || !uses(p.b, j) || !uses(p.a, k) || !uses(p.b, k))
    return std::nullopt;
  return p;
}

// Operands tensor cores take as they are: stored fp16 values (mma.sync
// f16), or, on a target that allows TF32 (target.h), stored fp32 ones
// (mma.sync tf32, which rounds them).
bool tensor_core_operands(const target::Target& target, const MatrixProduct& p) {
  if (holds_halves(p.a->tensor) && holds_halves(p.b->tensor)) return true;
  return target.tf32 && holds_stored(p.a->tensor, ir::DType::Float32) && holds_stored(p.b->tensor, ir::DType::Float32);
}

// The stage that writes a product's tiles out: its elementwise consumer or
// itself; for a convolution's product (ops/conv2d_implicit_gemm.h), the
// convolution's output (the product's columns put back into images,
// `images`) or the elementwise consumer of that. writer -1: none alone.
struct TileWriter {
  int writer = -1;
  int images = -1;
};
// Whether `stage` holds a split reduction's partial sums (SplitK): its one
// reader is the stage it was factored out of, which adds them.
bool partial_sums(const schedule::State& state, int stage) {
  const auto readers = consumers(state, stage);
  return readers.size() == 1 &&
         schedule::rfactor_name(state.stages()[readers[0]].name()) == state.stages()[stage].name();
}

TileWriter tile_writer(const schedule::State& state, int stage) {
  const auto& stages = state.stages();
  const ir::Tensor& product = stages[stage].tensor;
  // Partial sums are written out whole, for the stage that adds them.
  if (partial_sums(state, stage)) return {stage, -1};
  if (!schedule::is_conv_product(product)) {
    const int consumer = elementwise_matched_consumer(state, stage);
    return {consumer >= 0 ? consumer : stage, -1};
  }
  for (int i = 0; i < static_cast<int>(stages.size()); ++i) {
    const ir::Tensor& r = stages[i].tensor;
    const auto inputs = r->inputs();
    if (!r->attrs.count("implicit_gemm") || std::find(inputs.begin(), inputs.end(), product) == inputs.end()) continue;
    if (stages[i].location != schedule::Location::Inlined) {
      const int consumer = elementwise_matched_consumer(state, i);
      return {consumer >= 0 ? consumer : i, i};
    }
    const auto readers = consumers(state, i);  // through the inlined images
    if (readers.size() == 1 && stages[readers[0]].tensor->shape == r->shape) return {readers[0], i};
    return {};
  }
  return {};
}

// A copy of `input` in shared memory for `reader`, computed at its
// `step_loop`, the copy's loops fused; returns the fused loop (the rules
// split it over the block's threads). `dtype` as CacheReadStep's.
std::string add_shared_copy(SketchBuilder& n, const std::string& reader, const ir::Tensor& input,
                            const std::string& step_loop, const std::string& dtype = "") {
  std::vector<int> layout;
  std::vector<std::string> axes;
  for (size_t d = 0; d < input->shape.size(); ++d) {
    layout.push_back(static_cast<int>(d));
    axes.push_back(schedule::cache_read_axis(d));
  }
  n.add(schedule::CacheReadStep{reader, input->name, layout, "shared", dtype});
  const std::string copy = schedule::cache_read_name(input->name);
  n.add(schedule::ComputeAtStep{copy, reader, step_loop});
  return n.fuse(copy, axes);
}

}  // namespace

SketchRule::Condition TensorCoreTiling::condition(const SketchContext& ctx, const SketchBuilder& b, int stage) const {
  if (ctx.target.kind != "cuda" || ctx.target.gpu.arch < 80) return Condition::Pass;
  const auto& state = b.state();
  const schedule::Stage& s = b.stage(stage);
  // (A cache_write's accumulator is the product after AddCacheWrite: tiled
  // for tensor cores once, from the product itself.)
  if (!needs_multi_level_tiling(state, stage) || !untouched(s) || schedule::is_cache_write_local(*s.tensor))
    return Condition::Pass;
  const auto product = matrix_product(s.tensor);
  if (!product || !tensor_core_operands(ctx.target, *product)) return Condition::Pass;
  const auto& shape = s.tensor->shape;
  const int64_t k = s.tensor->reduce_axes[0].extent;
  if (shape[shape.size() - 2] % kTile != 0 || shape.back() % kTile != 0 || k % kTile != 0) return Condition::Pass;
  const TileWriter w = tile_writer(state, stage);
  if (w.writer < 0 || (w.writer != stage && !untouched(state.stages()[w.writer]))) return Condition::Pass;
  return Condition::Apply;
}

std::vector<std::pair<SketchBuilder, int>> TensorCoreTiling::apply(const SketchContext&, const SketchBuilder& b,
                                                                   int stage) const {
  using schedule::AnnotateStep;
  using schedule::ComputeAtStep;
  using schedule::ReorderStep;
  using schedule::SplitStep;
  SketchBuilder n = b;
  const std::string c = b.stage(stage).name();
  const TileWriter w = tile_writer(b.state(), stage);
  const std::string out = b.stage(w.writer).name();
  const size_t rank = b.stage(stage).tensor->shape.size();

  // C accumulates in a warp's fragments, which store the block's tiles in
  // shared memory; C, a copy of those, is the output stage or is inlined
  // into it (through the elementwise stages between them).
  n.add(schedule::CacheWriteStep{c, "shared"});
  const std::string tiles = schedule::cache_write_name(c);
  n.add(schedule::CacheWriteStep{tiles, "fragment"});
  const std::string fragment = schedule::cache_write_name(tiles);
  if (out != c) n.add(schedule::ComputeInlineStep{c});
  const std::string images = w.images >= 0 ? b.stage(w.images).name() : "";
  if (w.images >= 0 && out != images && b.stage(w.images).location != schedule::Location::Inlined)
    n.add(schedule::ComputeInlineStep{images});

  // The writer's rows and columns: the product's, or, for a convolution,
  // the output channels and the positions (n, y, x) fused, which index the
  // product's positions in order (their digits recombine: tir/simplify.h):
  // channels x positions in NCHW, positions x channels in NHWC.
  auto osp = names_of(n.stage(n.state().stage_index(out)), ir::IterKind::Spatial);
  const auto& oshape = b.stage(w.writer).tensor->shape;
  std::vector<std::string> batch(osp.begin(), osp.end() - 2);
  std::string oi = osp[osp.size() - 2], oj = osp.back();
  int64_t rows = oshape[oshape.size() - 2], cols = oshape.back();
  if (w.images >= 0) {
    const schedule::ImagePositions images_of = schedule::image_positions(b.stage(stage).tensor, osp, oshape[0]);
    batch = oshape[0] == 1 ? std::vector<std::string>{osp[0]} : std::vector<std::string>{};
    n.add(ReorderStep{out, images_of.order});
    oi = images_of.channels;
    oj = n.fuse(out, images_of.positions);
    rows = oshape[images_of.positions_are_rows ? 3 : 1];
    cols = oshape[0] * oshape[1] * oshape[2] * oshape[3] / rows;
    if (images_of.positions_are_rows) {
      std::swap(oi, oj);
      std::swap(rows, cols);
    }
  }
  BlockThreads warps;
  warps.threads_per_unit = kWarpLanes;
  std::vector<int> slots;
  for (const auto& [iter, extent] : {std::pair{oi, rows}, std::pair{oj, cols}}) {
    n.add(SplitStep{out, iter, {kTile}});
    const std::string outer = split_part(iter, 0);
    const int slot = n.add_slot(TileSlot{out, outer, (extent + kTile - 1) / kTile, 2, false});
    n.follow(out, outer, slot, {1, 1});
    warps.lengths.push_back({slot, 0});
    slots.push_back(slot);
  }
  const int block = n.add_block(std::move(warps));
  auto tile_parts = [](const std::string& i, const std::string& j, size_t part) {
    return std::vector<std::string>{split_part(split_part(i, 0), part), split_part(split_part(j, 0), part)};
  };
  const std::vector<std::string> inner_tile = {split_part(oi, 1), split_part(oj, 1)};
  n.add(ReorderStep{out, concat({batch, tile_parts(oi, oj, 0), tile_parts(oi, oj, 1), tile_parts(oi, oj, 2), inner_tile})});
  const std::string block_loop = n.fuse(out, concat({batch, tile_parts(oi, oj, 0)}));
  n.add(AnnotateStep{out, block_loop, Annotation::BlockX});
  // The block's outputs written out 32 consecutive ones per warp.
  const std::string written = n.fuse(out, concat({tile_parts(oi, oj, 1), tile_parts(oi, oj, 2), inner_tile}));
  n.fetch_split(out, written, block);
  n.add(AnnotateStep{out, split_part(written, 1), Annotation::ThreadY});
  n.add(AnnotateStep{out, split_part(written, 2), Annotation::ThreadX});

  // The shared tiles, one warp's per threadIdx.y, each stored from a fragment.
  n.add(ComputeAtStep{tiles, out, block_loop});
  const auto ssp = names_of(n.stage(n.state().stage_index(tiles)), ir::IterKind::Spatial);  // C's axes
  const std::string si = ssp[rank - 2], sj = ssp[rank - 1];
  for (size_t d = 0; d < 2; ++d) {
    const std::string& iter = d == 0 ? si : sj;
    n.add(SplitStep{tiles, iter, {kTile}});
    n.follow(tiles, split_part(iter, 0), slots[d], {1, 1});
  }
  const std::vector<std::string> sbatch(ssp.begin(), ssp.begin() + static_cast<std::ptrdiff_t>(rank) - 2);
  n.add(ReorderStep{tiles, concat({sbatch, tile_parts(si, sj, 0), tile_parts(si, sj, 1), tile_parts(si, sj, 2),
                                   {split_part(si, 1), split_part(sj, 1)}})});
  const std::string warp_loop = n.fuse(tiles, tile_parts(si, sj, 1));
  n.add(AnnotateStep{tiles, warp_loop, Annotation::ThreadY});
  n.add(AnnotateStep{tiles, split_part(si, 1), Annotation::TensorCore});

  // The fragments: per step of the reduction (its length a slot's), both
  // operands' block slices in shared memory; per 16 of it, each fragment's
  // tile multiplied and added.
  n.add(ComputeAtStep{fragment, tiles, warp_loop});
  // (Copied: the steps below insert stages, which moves them.)
  const schedule::Stage fs = n.stage(n.state().stage_index(fragment));
  const auto fsp = names_of(fs, ir::IterKind::Spatial), frd = names_of(fs, ir::IterKind::Reduce);
  const std::string fi = fsp[rank - 2], fj = fsp[rank - 1], k = frd[0];
  for (const std::string& iter : {fi, fj, k}) n.add(SplitStep{fragment, iter, {kTile}});
  n.tile(fragment, split_part(k, 0), 1);
  const std::vector<std::string> fbatch(fsp.begin(), fsp.end() - 2);
  const std::string step_loop = split_part(split_part(k, 0), 0);
  n.add(ReorderStep{fragment, concat({fbatch, {step_loop, split_part(split_part(k, 0), 1)},
                                      {split_part(fi, 0), split_part(fj, 0), split_part(fi, 1), split_part(fj, 1),
                                       split_part(k, 1)}})});
  n.add(AnnotateStep{fragment, split_part(fi, 1), Annotation::TensorCore});
  // In half when the operands hold halves (mma.sync reads them as they
  // are, in half the shared memory); else fp32, which TF32 rounds.
  const auto product = matrix_product(b.stage(stage).tensor);
  const bool halves = holds_halves(product->a->tensor) && holds_halves(product->b->tensor);
  std::set<std::string> fetched;
  for (const auto& input : fs.tensor->inputs()) {
    if (!fetched.insert(input->name).second) continue;
    // A copy that only reorders an input (batch_matmul's transposed B) is
    // read through: the fetch reorders it on the way.
    if (!input->is_placeholder()) n.add(schedule::ComputeInlineStep{input->name});
    const std::string copy = schedule::cache_read_name(input->name);
    const std::string all = add_shared_copy(n, fragment, input, step_loop, halves ? "float16" : "");
    // Each lane copies one element, or (a choice) 16 bytes: 8 halves or 4
    // floats, one load where the code generator proves them aligned (an
    // input read as it is stored: the weights; not a convolution's padded
    // window, gathered element by element).
    const int lanes = static_cast<int>(n.sites().vectorize.size());
    n.sites().vectorize.push_back({copy, split_part(all, 3), true});
    n.fetch_split(copy, all, block, lanes, halves ? 8 : 4);
    n.add(AnnotateStep{copy, split_part(all, 1), Annotation::ThreadY});
    n.add(AnnotateStep{copy, split_part(all, 2), Annotation::ThreadX});
    n.mark_structured(copy);
    if (!input->is_placeholder()) n.mark_structured(input->name);
  }
  n.sites().unroll.push_back({fragment, n.stage(n.state().stage_index(fragment)).iters.front().name});
  n.sites().unroll.push_back({tiles, n.stage(n.state().stage_index(tiles)).iters.front().name});
  n.sites().pipeline.push_back({fragment, step_loop});
  for (const std::string& s : {fragment, tiles, c, out}) n.mark_structured(s);
  if (!images.empty()) n.mark_structured(images);
  n.note(c + ": " + kTensorCoreTilingNote + ", fragments per warp, operands fetched into shared memory, written out by " +
         out);
  // Every stage it added went in at or after this one: those before keep their places.
  return {{std::move(n), stage - 1}};
}

std::vector<int64_t> split_k_ranges(int64_t extent, int64_t reduce) {
  int64_t most = 1;
  for (int64_t ranges = 2; ranges <= schedule::kMaxReductionSplit; ranges *= 2)
    if (extent % ranges == 0 && reduce / ranges >= schedule::kMinPartialReduce) most = ranges;
  std::vector<int64_t> out;
  if (most >= 2) out.push_back(most);
  if (most / 4 >= 2) out.push_back(most / 4);
  return out;
}

SketchRule::Condition SplitK::condition(const SketchContext&, const SketchBuilder& b, int stage) const {
  const auto& state = b.state();
  const schedule::Stage& s = b.stage(stage);
  // (An accumulator is its stage after AddCacheWrite: split once, from the stage itself.)
  if (!needs_multi_level_tiling(state, stage) || !untouched(s) || schedule::is_cache_write_local(*s.tensor) ||
      partial_sums(state, stage) || spatial_length(state, stage) >= kSplitKMaxOutputs)
    return Condition::Pass;
  if (split_k_ranges(s.tensor->reduce_axes[0].extent, reduce_length(state, stage)).empty()) return Condition::Pass;
  const TileWriter w = tile_writer(state, stage);
  if (w.writer < 0 || (w.writer != stage && !untouched(state.stages()[w.writer]))) return Condition::Pass;
  return Condition::Apply;
}

std::vector<std::pair<SketchBuilder, int>> SplitK::apply(const SketchContext& ctx, const SketchBuilder& b,
                                                         int stage) const {
  const schedule::Stage& s = b.stage(stage);
  const std::string p = s.name(), axis = s.tensor->reduce_axes[0].var.name();
  const std::string writer = b.stage(tile_writer(b.state(), stage).writer).name();
  std::vector<std::pair<SketchBuilder, int>> out;
  for (int64_t ranges : split_k_ranges(s.tensor->reduce_axes[0].extent, reduce_length(b.state(), stage))) {
    SketchBuilder n = b;
    n.add(schedule::RfactorStep{p, axis, ranges, /*by_range=*/true});
    // The stage now adds the partial sums (the stage before it), in the
    // writer's threads; a stage written out by itself is the plain GPU stage.
    if (writer != p) {
      const std::string thread =
          add_plain_gpu_stage(n, n.state().stage_index(writer), ctx.target.gpu.max_threads_per_block);
      n.add(schedule::ComputeAtStep{p, writer, thread});
      n.sites().unroll.push_back({p, n.stage(n.state().stage_index(p)).iters.front().name});
      n.mark_structured(writer);
      n.mark_structured(p);
    }
    n.note(p + ": " + kSplitKNote + " into " + std::to_string(ranges) + " ranges of " + axis + ", added in " + writer +
           "'s threads");
    out.push_back({std::move(n), stage});  // the partial sums, where the stage was: tiled next
  }
  return out;
}

SketchRule::Condition GpuMultiLevelTiling::condition(const SketchContext&, const SketchBuilder& b, int stage) const {
  const auto& state = b.state();
  if (!needs_multi_level_tiling(state, stage) || !untouched(b.stage(stage))) return Condition::Pass;
  const int consumer = elementwise_matched_consumer(state, stage);
  return consumer >= 0 && untouched(state.stages()[consumer]) ? Condition::ApplyAndSkipRest : Condition::Pass;
}

std::vector<std::pair<SketchBuilder, int>> GpuMultiLevelTiling::apply(const SketchContext&, const SketchBuilder& b,
                                                                      int stage) const {
  const int consumer = elementwise_matched_consumer(b.state(), stage);
  const schedule::Stage& ps = b.stage(stage);
  const std::string p = ps.name(), c = b.stage(consumer).name();
  const auto psp = names_of(ps, ir::IterKind::Spatial), prd = names_of(ps, ir::IterKind::Reduce);
  const auto csp = names_of(b.stage(consumer), ir::IterKind::Spatial);
  SketchBuilder n = b;

  // Lengths (t, i1, i2) per spatial axis: the consumer splits it into
  // (block, t, i1 * i2), the stage what one thread computes into (i1, i2).
  BlockThreads threads;
  for (size_t i = 0; i < psp.size(); ++i) {
    const int slot = n.add_slot(TileSlot{p, psp[i], ps.iters[ps.iter_index(psp[i])].extent, 3, false});
    n.follow(c, csp[i], slot, {1, 2});
    n.follow(p, psp[i], slot, {1, 1}, 1);
    threads.lengths.push_back({slot, 0});
  }
  const int block = n.add_block(std::move(threads));
  for (const auto& r : prd) n.tile(p, r, 2);
  n.add(schedule::ReorderStep{c, concat({parts(csp, 0), parts(csp, 1), parts(csp, 2)})});
  const std::string block_loop = n.fuse(c, parts(csp, 0));
  const std::string thread_loop = n.fuse(c, parts(csp, 1));
  n.add(schedule::AnnotateStep{c, block_loop, Annotation::BlockX});
  n.add(schedule::AnnotateStep{c, thread_loop, Annotation::ThreadX});

  const auto order = concat({parts(psp, 0), parts(prd, 0), parts(prd, 1), parts(psp, 1), parts(prd, 2), parts(psp, 2)});
  n.add(schedule::ReorderStep{p, order});
  n.add(schedule::ComputeAtStep{p, c, thread_loop});

  // Cooperative fetching: per step of the outer reduce loops, the block's
  // slice of each input in shared memory, every thread copying its share.
  const std::string step_loop = parts(prd, 0).back();
  std::set<std::string> fetched;
  for (const auto& input : ps.tensor->inputs()) {
    if (!fetched.insert(input->name).second) continue;
    const std::string copy = schedule::cache_read_name(input->name);
    const std::string all = add_shared_copy(n, p, input, step_loop);
    const int lanes = static_cast<int>(n.sites().vectorize.size());
    n.sites().vectorize.push_back({copy, split_part(all, 2), true});
    n.fetch_split(copy, all, block, lanes);
    n.add(schedule::AnnotateStep{copy, split_part(all, 1), Annotation::ThreadX});
    n.mark_structured(copy);
  }
  n.sites().unroll.push_back({p, order.front()});
  n.sites().pipeline.push_back({p, step_loop});
  n.mark_structured(p);
  n.mark_structured(c);
  n.note(p + ": GPU multi-level tiling in " + c + "'s threads, inputs fetched into shared memory");
  // The copies went in before the stage: the stages before it keep their places.
  return {{std::move(n), stage - 1}};
}

bool is_tensor_core_sketch(const Sketch& sketch) {
  return std::any_of(sketch.rules.begin(), sketch.rules.end(), [](const std::string& rule) {
    return rule.find(kTensorCoreTilingNote) != std::string::npos;
  });
}

SketchRule::Condition AddCacheWriteToPartialSums::condition(const SketchContext& ctx, const SketchBuilder& b,
                                                            int stage) const {
  if (!partial_sums(b.state(), stage) || !untouched(b.stage(stage))) return Condition::Pass;
  return AddCacheWrite::condition(ctx, b, stage) == Condition::Pass ? Condition::Pass : Condition::ApplyAndSkipRest;
}

bool is_split_k_sketch(const Sketch& sketch) {
  return std::any_of(sketch.rules.begin(), sketch.rules.end(),
                     [](const std::string& rule) { return rule.find(kSplitKNote) != std::string::npos; });
}

SketchRules gpu_sketch_rules() {
  SketchRules rules;
  rules.push_back(std::make_unique<AlwaysInline>());
  rules.push_back(std::make_unique<CrossThreadReduction>());
  rules.push_back(std::make_unique<TensorCoreTiling>());
  rules.push_back(std::make_unique<SplitK>());
  rules.push_back(std::make_unique<AddCacheWriteToPartialSums>());
  rules.push_back(std::make_unique<AddCacheWrite>());
  rules.push_back(std::make_unique<GpuMultiLevelTiling>());
  rules.push_back(std::make_unique<SkipStage>());
  return rules;
}

}  // namespace tessera::autoschedule
