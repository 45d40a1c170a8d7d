#include "schedule/gpu_schedule.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "ir/functor.h"
#include "schedule/iter_names.h"
#include "tessera/error.h"

namespace tessera::schedule {

namespace {

// Tiles of `tile` covering `extent`, the last one ragged.
int64_t tiles_along(int64_t extent, int64_t tile) { return (extent + tile - 1) / tile; }

bool is_output(const ir::ComputeDAG& dag, const ir::Tensor& t) {
  const auto& outs = dag.outputs();
  return std::find(outs.begin(), outs.end(), t) != outs.end();
}

std::vector<std::string> spatial_names(const ir::Tensor& t) {
  std::vector<std::string> names;
  for (const auto& a : t->axes) names.push_back(a.var.name());
  return names;
}

// One output element per thread: the stage's spatial loops fused, split into
// blocks of threads.
void bind_elementwise(Trace& trace, const ir::Tensor& t, int max_threads) {
  std::vector<std::string> axes = spatial_names(t);
  if (axes.empty()) return;
  std::string all = axes[0];
  if (axes.size() > 1) {
    trace.fuse(t->name, axes);
    all = fused_name(axes);
  }
  trace.split(t->name, all, {gpu_block_threads(t->num_elements(), max_threads)});
  trace.bind(t->name, split_part(all, 0), Annotation::BlockX);
  trace.bind(t->name, split_part(all, 1), Annotation::ThreadX);
}

// The thread loop bind_elementwise gives `t`: a stage computed at it runs in
// t's threads, for one output each.
std::string elementwise_thread(const ir::Tensor& t) { return split_part(fused_name(spatial_names(t)), 1); }

// A reduction whose outputs are too few to fill the GPU one thread each
// (a row's max or sum, a norm's mean) and long enough for a warp: one block
// per output, its threads reducing it together (a cross-thread reduction,
// tir/lower.h), consecutive threads reading consecutive elements.

int64_t reduce_length(const ir::Tensor& t) {
  int64_t n = 1;
  for (const auto& r : t->reduce_axes) n *= r.extent;
  return n;
}

bool reduce_across_threads(const ir::Tensor& t) {
  return t->is_reduction() && t->num_elements() <= kCrossThreadMaxOutputs && reduce_length(t) >= kCrossThreadMinReduce;
}

void bind_cross_thread(Trace& trace, const ir::Tensor& t, int max_threads) {
  std::vector<std::string> reduce;
  for (const auto& r : t->reduce_axes) reduce.push_back(r.var.name());
  std::string k = reduce[0];
  if (reduce.size() > 1) {
    trace.fuse(t->name, reduce);
    k = fused_name(reduce);
  }
  // The largest power of two up to the reduction, at most 256 threads.
  int64_t threads = 32;
  while (threads * 2 <= std::min<int64_t>({reduce_length(t), 256, max_threads})) threads *= 2;
  trace.split(t->name, k, {threads});
  std::vector<std::string> order = spatial_names(t);
  std::string outputs;
  if (!order.empty()) {
    outputs = order.size() > 1 ? fused_name(order) : order[0];
    if (order.size() > 1) trace.fuse(t->name, order);
  }
  trace.reorder(t->name, outputs.empty() ? std::vector<std::string>{split_part(k, 1), split_part(k, 0)}
                                         : std::vector<std::string>{outputs, split_part(k, 1), split_part(k, 0)});
  if (!outputs.empty()) trace.bind(t->name, outputs, Annotation::BlockX);
  trace.bind(t->name, split_part(k, 1), Annotation::ThreadX);
}

// dense_pack too: a network's dense reads its weight stored (N/bn, K, bn),
// whose slice of a tile is as contiguous as (N, K)'s.
// A convolution computed as one matrix product (ops/conv2d_implicit_gemm.h) too.
bool is_matmul(const ir::Tensor& t) {
  return t->tag == "dense" || t->tag == "dense_pack" || t->tag == "batch_matmul" || is_conv_product(t);
}

// (A copy into another layout, attrs "layout_copy", is computed: it exists so
// that its reader's neighbouring threads read neighbouring elements.
// Attention's keys transposed: inlined, a warp of the scores' kernel read 32
// keys a head's width apart, 32 transactions a load; by that count about
// 0.8 ms a layer of BERT-base at batch 16, where the H200 took 0.96 ms for
// the whole attention.)
bool inlined_by_default(const ir::ComputeDAG& dag, const ir::Tensor& t) {
  return !t->is_placeholder() && !t->is_reduction() && !is_output(dag, t) && !t->attrs.count("kept_whole") &&
         !t->attrs.count("layout_copy");
}

// Whether `t`'s value, with the stages inlined into it, calls a function
// (exp, tanh, erf, ...): what an inlined stage's every read recomputes.
bool calls_a_function(const ir::ComputeDAG& dag, const ir::Tensor& t) {
  bool calls = false;
  ir::post_order_visit(t->body, [&](const ir::Expr& e) {
    if (e.as<ir::CallNode>()) calls = true;
    if (const auto* load = e.as<ir::TensorLoadNode>())
      if (inlined_by_default(dag, load->tensor) && calls_a_function(dag, load->tensor)) calls = true;
  });
  return calls;
}

// An elementwise stage computed once, in a kernel of its own, rather than
// inlined: a reduction reads each of its elements several times and its
// value calls a function. Attention's probabilities (exp(score - maximum) /
// sum) are read once per channel of the values, 64 times in BERT-base:
// inlined, the values' kernel computed 64 exponentials for each.
bool recomputed_per_read(const ir::ComputeDAG& dag, const ir::Tensor& t) {
  if (!calls_a_function(dag, t)) return false;
  for (const auto& reader : dag.tensors()) {
    if (!reader->is_reduction()) continue;
    const auto inputs = reader->inputs();
    if (std::find(inputs.begin(), inputs.end(), t) == inputs.end()) continue;
    int64_t reads = reader->num_elements();
    for (const auto& r : reader->reduce_axes) reads *= r.extent;
    if (reads > t->num_elements()) return true;
  }
  return false;
}

// Whether `reader` reads `t` directly or through stages inlined into it (so
// that t computed at reader's loop is read there; attention's scores have
// the output's shape when the sequence equals the head's width, yet only the
// softmax reads them).
bool reads_through_inlined(const ir::ComputeDAG& dag, const ir::Tensor& reader, const ir::Tensor& t) {
  for (const auto& in : reader->inputs()) {
    if (in == t) return true;
    if (inlined_by_default(dag, in) && reads_through_inlined(dag, in, t)) return true;
  }
  return false;
}

// The output of `anchor`'s shape (the anchor itself, or the elementwise
// chain after it), or null.
ir::Tensor output_of_shape(const ir::ComputeDAG& dag, const ir::Tensor& anchor) {
  ir::Tensor out;
  for (const auto& o : dag.outputs())
    if (o->shape == anchor->shape) out = o;
  return out;
}

// Every computed stage but the anchor and the output inlined (the padding,
// bias, activation, residual); false when one is another reduction.
bool inline_others(const ir::ComputeDAG& dag, const ir::Tensor& anchor, const ir::Tensor& out, Trace& trace) {
  for (const auto& t : dag.tensors())
    if (!t->is_placeholder() && t != anchor && t != out) {
      if (t->is_reduction()) return false;
      trace.compute_inline(t->name);
    }
  return true;
}

// The start of a schedule around one anchor stage (a product, a
// convolution) and its output: every other computed stage inlined (the
// padding, bias, activation, residual), a local accumulator when the anchor
// is the output itself. Returns the stage to compute in the output's
// threads, or nothing when the DAG holds another reduction.
std::optional<std::string> inline_around(const ir::ComputeDAG& dag, const ir::Tensor& anchor, const ir::Tensor& out,
                                         Trace& trace) {
  if (!inline_others(dag, anchor, out, trace)) return std::nullopt;
  if (out != anchor) return anchor->name;
  trace.cache_write(anchor->name, "local");
  return cache_write_name(anchor->name);
}

}  // namespace

int64_t gpu_block_threads(int64_t elements, int max_threads) {
  return std::clamp<int64_t>((elements + 31) / 32 * 32, 32, std::min<int64_t>(256, max_threads));
}

bool is_conv_product(const ir::Tensor& t) { return t->tag == "conv2d_nchw_gemm" || t->tag == "conv2d_nhwc_gemm"; }

bool nhwc_window_rows(const ir::Tensor& operand, int64_t lanes) {
  if (operand->tag != "implicit_gemm_columns" || operand->axes.back().var.name() != "k") return false;
  const std::vector<ir::Tensor> inputs = operand->inputs();  // pad_temp, or the data itself
  return inputs.size() == 1 && inputs[0]->shape.size() == 4 && inputs[0]->shape[3] % lanes == 0;
}

ImagePositions image_positions(const ir::Tensor& product, const std::vector<std::string>& axes, int64_t batch) {
  if (product->tag == "conv2d_nhwc_gemm") {  // n y x f: in order already
    if (batch == 1) return {axes, {axes[1], axes[2]}, axes[3], true};
    return {axes, {axes[0], axes[1], axes[2]}, axes[3], true};
  }
  if (batch == 1) return {axes, {axes[2], axes[3]}, axes[1], false};
  return {{axes[1], axes[0], axes[2], axes[3]}, {axes[0], axes[2], axes[3]}, axes[1], false};
}

Trace gpu_default_schedule(const ir::ComputeDAG& dag, int max_threads) {
  Trace trace;
  // A reduction of the output's shape that the output reads (a convolution
  // before its bias and activation) is computed by the output's threads,
  // one element each: one kernel, no round trip through device memory.
  // Unless its outputs are few and each long (a network's last dense at
  // batch 1, 1000 outputs of 512 products in 4 blocks; a global pool): then
  // a block per output reduces it across its threads, and a second kernel
  // applies the epilogue.
  const ir::Tensor out = dag.outputs().size() == 1 ? dag.outputs()[0] : nullptr;
  std::vector<ir::Tensor> per_thread;
  for (const auto& t : dag.tensors()) {
    if (t->is_placeholder()) continue;
    if (inlined_by_default(dag, t) && !recomputed_per_read(dag, t)) {
      trace.compute_inline(t->name);
      continue;
    }
    if (out && t != out && t->is_reduction() && t->shape == out->shape && !t->attrs.count("kept_whole") &&
        reads_through_inlined(dag, out, t) && !reduce_across_threads(t)) {
      per_thread.push_back(t);
      continue;
    }
    if (reduce_across_threads(t)) {
      bind_cross_thread(trace, t, max_threads);
      continue;
    }
    bind_elementwise(trace, t, max_threads);
  }
  for (const auto& t : per_thread) trace.compute_at(t->name, out->name, elementwise_thread(out));
  return trace;
}

namespace {

// Split-K: `anchor`'s first reduce axis cut into `split` ranges, whose
// partial sums (its rf stage, a kernel of its own writing them to device
// memory) a local accumulator computes. Returns the accumulator, or nothing
// when the ranges do not divide the axis.
std::optional<std::string> split_reduction(Trace& trace, const ir::Tensor& anchor, int64_t split) {
  if (anchor->reduce_axes[0].extent % split != 0) return std::nullopt;
  const std::string rf = rfactor_name(anchor->name);
  trace.rfactor(anchor->name, anchor->reduce_axes[0].var.name(), split, /*by_range=*/true);
  trace.cache_write(rf, "local");
  return cache_write_name(rf);
}

// The second kernel of a split: a thread per element of `out` adding its
// partial sums (`anchor` computed in the thread; the stages between inlined).
void add_partial_sums(Trace& trace, const ir::Tensor& anchor, const ir::Tensor& out, int max_threads) {
  bind_elementwise(trace, out, max_threads);
  if (out != anchor) trace.compute_at(anchor->name, out->name, elementwise_thread(out));
}

// The tiles of gpu_matmul_schedule: `out` (the product, or the writer of
// its values: an epilogue, a convolution's images when `images`) in blocks
// of threads, `acc` (the accumulator) computed in each thread's loop, its
// reduction staged through shared memory. Split (plan.split_k > 1, after
// split_reduction), the stage tiled is the product's partial sums instead,
// their range along blockIdx.z. The product's rows are its axis `rows_axis`
// (by default the one before the columns, its last); every other axis is a
// batch along blockIdx.z (a batch_matmul's first; attention's weighted
// values (b, i, t, c) have their key tiles t there too).
void tile_product(Trace& trace, const ir::Tensor& product, const ir::Tensor& out, const std::string& acc,
                  const GpuMatmulPlan& plan, bool images, std::optional<size_t> rows_axis = std::nullopt) {
  const size_t rank = product->shape.size();
  const size_t rows_at = rows_axis.value_or(rank - 2);
  const bool split = plan.split_k > 1;
  std::string k = product->reduce_axes[0].var.name();
  const std::string tiled = split ? rfactor_name(product->name) : out->name;
  std::vector<std::string> acc_axes = spatial_names(product), blocks_z;
  for (size_t d = 0; d + 1 < rank; ++d)
    if (d != rows_at) blocks_z.push_back(acc_axes[d]);
  const std::string partial = rfactor_inner(k);  // split: the range, the partial sums' first axis
  if (split) {
    blocks_z.push_back(partial);
    acc_axes.insert(acc_axes.begin(), partial);
    k = rfactor_outer(k);
  }
  // The output: blocks of threads_y * rows x threads_x * cols, threads of
  // rows x cols, batch (and ranges) along blockIdx.z.
  std::vector<std::string> axes = split ? spatial_names(product) : spatial_names(out);
  std::string single_image;  // a batch of one: its loop, outermost (its index is 0)
  if (images && !split) {
    const ImagePositions images_of = image_positions(product, axes, out->shape[0]);
    if (out->shape[0] == 1) single_image = axes[0];
    trace.reorder(tiled, images_of.order);
    trace.fuse(tiled, images_of.positions);
    const std::string positions = fused_name(images_of.positions);
    axes = images_of.positions_are_rows ? std::vector<std::string>{positions, images_of.channels}
                                        : std::vector<std::string>{images_of.channels, positions};
  }
  const std::string i = axes[rows_at], j = axes[rank - 1];
  trace.split(tiled, i, {plan.threads_y, plan.rows});
  trace.split(tiled, j, {plan.threads_x, plan.cols});
  std::vector<std::string> order = blocks_z;
  if (!single_image.empty()) order.push_back(single_image);
  for (const auto& n :
       {split_part(i, 0), split_part(j, 0), split_part(i, 1), split_part(j, 1), split_part(i, 2), split_part(j, 2)})
    order.push_back(n);
  trace.reorder(tiled, order);
  if (blocks_z.size() > 1) trace.fuse(tiled, blocks_z);
  if (!blocks_z.empty()) trace.bind(tiled, fused_name(blocks_z), Annotation::BlockZ);
  trace.bind(tiled, split_part(i, 0), Annotation::BlockY);
  trace.bind(tiled, split_part(j, 0), Annotation::BlockX);
  trace.bind(tiled, split_part(i, 1), Annotation::ThreadY);
  trace.bind(tiled, split_part(j, 1), Annotation::ThreadX);
  trace.compute_at(acc, tiled, split_part(j, 1));

  // The accumulator: K in steps of step_k, each step's operands staged in shared memory.
  trace.split(acc, k, {plan.step_k});
  std::vector<std::string> acc_order{split_part(k, 0), split_part(k, 1)};
  acc_order.insert(acc_order.end(), acc_axes.begin(), acc_axes.end());
  trace.reorder(acc, acc_order);
  for (const auto& operand : product->inputs()) {
    std::vector<int> layout;
    for (size_t d = 0; d < operand->shape.size(); ++d) layout.push_back(static_cast<int>(d));
    trace.cache_read(acc, operand->name, layout, "shared");
    // Each thread of the block fetches its share of the slice, four
    // floats at a time (one float4 load) where the operand is stored as the
    // slice reads it (a placeholder, not a transpose inlined into the copy;
    // or an NHWC window's channels) and the rows of the slice and of the
    // operand are whole multiples of four.
    const std::string copy = cache_read_name(operand->name);
    std::vector<std::string> copy_axes;
    for (size_t d = 0; d < operand->shape.size(); ++d) copy_axes.push_back(cache_read_axis(d));
    trace.compute_at(copy, acc, split_part(k, 0));
    const bool vectors = (operand->is_placeholder() || nhwc_window_rows(operand, 4)) && plan.step_k % 4 == 0 &&
                         operand->shape.back() % 4 == 0;
    if (vectors) {
      const std::string row = copy_axes.back();
      trace.split(copy, row, {4});
      copy_axes.back() = split_part(row, 0);
      trace.vectorize(copy, split_part(row, 1));
    }
    trace.fuse(copy, copy_axes);
    const std::string fused = fused_name(copy_axes);
    trace.split(copy, fused, {plan.threads_y, plan.threads_x});
    trace.bind(copy, split_part(fused, 1), Annotation::ThreadY);
    trace.bind(copy, split_part(fused, 2), Annotation::ThreadX);
  }
  // The rows x cols accumulators are registers only when every index is a constant.
  trace.unroll(acc, split_part(k, 1));
  trace.unroll(acc, product->axes[rows_at].var.name());
  trace.unroll(acc, product->axes[rank - 1].var.name());
  if (split) trace.unroll(acc, partial);
  trace.unroll(tiled, split_part(i, 2));
  trace.unroll(tiled, split_part(j, 2));
  if (plan.auto_unroll > 0) trace.pragma(acc, split_part(k, 0), "auto_unroll_max_step$" + std::to_string(plan.auto_unroll));
}

}  // namespace

std::optional<Trace> gpu_matmul_schedule(const ir::ComputeDAG& dag, int max_threads, const GpuMatmulPlan& plan) {
  if (max_threads < plan.threads_y * plan.threads_x) return std::nullopt;
  ir::Tensor product;
  for (const auto& t : dag.tensors())
    if (is_matmul(t)) product = t;
  if (!product || product->reduce_axes.size() != 1) return std::nullopt;
  const size_t rank = product->shape.size();
  if (product->shape[rank - 2] < plan.threads_y * plan.rows || product->shape[rank - 1] < plan.threads_x * plan.cols)
    return std::nullopt;

  // A convolution's product has none of the output's shape: the output (its
  // images, with the epilogue) is tiled as the product, its channels and
  // its positions (n, y, x) fused, which index the product's positions in
  // order (their digits recombine: tir/simplify.h).
  ir::Tensor out = output_of_shape(dag, product);
  const bool images =
      !out && is_conv_product(product) && dag.outputs().size() == 1 && dag.outputs()[0]->shape.size() == 4;
  if (images) out = dag.outputs()[0];
  if (!out) return std::nullopt;
  Trace trace;
  if (plan.split_k > 1) {
    if (!inline_others(dag, product, out, trace)) return std::nullopt;
    const std::optional<std::string> partial_sums = split_reduction(trace, product, plan.split_k);
    if (!partial_sums) return std::nullopt;
    tile_product(trace, product, out, *partial_sums, plan, images);
    add_partial_sums(trace, product, out, max_threads);
    return trace;
  }
  const std::optional<std::string> accumulator = inline_around(dag, product, out, trace);
  if (!accumulator) return std::nullopt;
  tile_product(trace, product, out, *accumulator, plan, images);
  return trace;
}

GpuMatmulPlan gpu_matmul_split(const ir::ComputeDAG& dag, GpuMatmulPlan plan) {
  ir::Tensor product;
  for (const auto& t : dag.tensors())
    if (is_matmul(t) || t->tag == "winograd_bgemm") product = t;
  if (!product || product->reduce_axes.size() != 1) return plan;
  const size_t rank = product->shape.size();
  const int64_t batch = rank == 3 ? product->shape[0] : 1;
  const int64_t blocks = batch * tiles_along(product->shape[rank - 2], plan.threads_y * plan.rows) *
                         tiles_along(product->shape[rank - 1], plan.threads_x * plan.cols);
  const int64_t k = product->reduce_axes[0].extent;
  plan.split_k = reduction_split(blocks, k, k, plan.step_k);
  return plan;
}

namespace {

// The largest t in [lo, hi] dividing n, else hi; never more than n.
int64_t dividing_threads(int64_t n, int64_t lo, int64_t hi) {
  for (int64_t t = hi; t >= lo; --t)
    if (n % t == 0) return std::min(t, n);
  return std::min(hi, n);
}

// A pair "a,b" of a convolution's attributes ("strides", "dilation"), or 1, 1.
std::pair<int64_t, int64_t> attr_pair(const ir::Tensor& t, const std::string& key) {
  const auto it = t->attrs.find(key);
  if (it == t->attrs.end()) return {1, 1};
  const size_t comma = it->second.find(',');
  if (comma == std::string::npos) return {1, 1};
  return {std::stoll(it->second.substr(0, comma)), std::stoll(it->second.substr(comma + 1))};
}

}  // namespace

int64_t reduction_split(int64_t blocks, int64_t reduce, int64_t divisible, int64_t granule) {
  int64_t split = 1;
  for (int64_t s = 2; s <= kMaxReductionSplit && blocks * split < kSplitReductionBlocks; s *= 2) {
    if (divisible % (s * granule) != 0 || reduce / s < kMinPartialReduce) break;
    split = s;
  }
  return split;
}

GpuConvPlan gpu_conv_plan(const std::vector<int64_t>& out, int64_t channels, int max_threads, int64_t taps) {
  const int64_t n = out[0], f = out[1], h = out[2], w = out[3];
  GpuConvPlan p;
  // Columns: whole rows of a block's tile where 4..8 threads divide them
  // (56 = 7 x 8, 28 = 7 x 4), so that no block computes a ragged edge.
  p.per_x = w >= 32 ? 2 : 1;
  p.threads_x = dividing_threads((w + p.per_x - 1) / p.per_x, 4, 8);
  p.threads_y = dividing_threads(h, 2, 4);
  // Channels: the rest of about 256 threads (threadIdx.z holds at most 64).
  const int64_t budget = std::min<int64_t>(256, max_threads) / (p.threads_x * p.threads_y);
  p.threads_f = 1;
  while (p.threads_f * 2 <= std::min<int64_t>({budget, 64, f})) p.threads_f *= 2;
  // Registers: up to 4 channels a thread while two blocks of channels remain.
  p.per_f = 4;
  while (p.per_f > 1 && f < 2 * p.threads_f * p.per_f) p.per_f /= 2;
  p.step_rc = std::min<int64_t>(channels, 8);
  const int64_t blocks = n * tiles_along(f, p.threads_f * p.per_f) * tiles_along(h, p.threads_y * p.per_y) *
                         tiles_along(w, p.threads_x * p.per_x);
  p.split_rc = reduction_split(blocks, channels * taps, channels, p.step_rc);
  return p;
}

int64_t gpu_conv_shared_bytes(const GpuConvPlan& p, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                              int64_t dilation_h, int64_t dilation_w) {
  const int64_t rows = (p.threads_y * p.per_y - 1) * stride_h + (kh - 1) * dilation_h + 1;
  const int64_t cols = (p.threads_x * p.per_x - 1) * stride_w + (kw - 1) * dilation_w + 1;
  const int64_t input = p.step_rc * rows * cols;
  const int64_t weights = p.threads_f * p.per_f * p.step_rc * kh * kw;
  return 4 * (input + weights);
}

std::optional<Trace> gpu_conv2d_schedule(const ir::ComputeDAG& dag, int max_threads, int64_t max_shared_bytes,
                                         const std::optional<GpuConvPlan>& given) {
  ir::Tensor conv;
  for (const auto& t : dag.tensors())
    if (t->tag == "conv2d_nchw") conv = t;
  if (!conv || conv->reduce_axes.size() != 3 || conv->shape.size() != 4) return std::nullopt;
  const ir::Tensor out = output_of_shape(dag, conv);
  if (!out) return std::nullopt;
  const int64_t channels = conv->reduce_axes[0].extent, kh = conv->reduce_axes[1].extent,
                kw = conv->reduce_axes[2].extent;
  GpuConvPlan plan = given ? *given : gpu_conv_plan(conv->shape, channels, max_threads, kh * kw);
  const auto [stride_h, stride_w] = attr_pair(conv, "strides");
  const auto [dilation_h, dilation_w] = attr_pair(conv, "dilation");
  auto shared = [&] { return gpu_conv_shared_bytes(plan, kh, kw, stride_h, stride_w, dilation_h, dilation_w); };
  // A plan of our own stages fewer channels a step until both slices fit.
  while (!given && plan.step_rc > 1 && shared() > max_shared_bytes) plan.step_rc = (plan.step_rc + 1) / 2;
  if (plan.threads() > max_threads || shared() > max_shared_bytes) return std::nullopt;
  if (plan.split_rc < 1) return std::nullopt;
  const bool split = plan.split_rc > 1;

  Trace trace;  // the padding is computed as the input is fetched into shared memory
  std::string rc = conv->reduce_axes[0].var.name();
  const std::string ry = conv->reduce_axes[1].var.name(), rx = conv->reduce_axes[2].var.name();
  // `tiled` is the stage whose blocks and threads tile the output, `acc`
  // the accumulator its threads compute. Split, that is the partial sums
  // (the rf stage, a kernel of its own: it has a partial-sum axis more, and
  // reduces a range of the channels); else the output.
  std::string tiled = out->name, acc;
  std::vector<std::string> acc_axes = spatial_names(conv);
  if (split) {
    const std::optional<std::string> partial_sums =
        inline_others(dag, conv, out, trace) ? split_reduction(trace, conv, plan.split_rc) : std::nullopt;
    if (!partial_sums) return std::nullopt;
    acc = *partial_sums;
    tiled = rfactor_name(conv->name);
    acc_axes.insert(acc_axes.begin(), rfactor_inner(rc));
    rc = rfactor_outer(rc);
  } else {
    const std::optional<std::string> accumulator = inline_around(dag, conv, out, trace);
    if (!accumulator) return std::nullopt;
    acc = *accumulator;
  }

  // The output: blockIdx.z over images (and partial sums) and channel
  // blocks, y and x over tiles of rows and columns; threadIdx.z / y / x
  // within them; each thread's per_f x per_y x per_x outputs innermost.
  const std::vector<std::string> axes = split ? spatial_names(conv) : spatial_names(out);
  const std::string n = axes[0], f = axes[1], y = axes[2], x = axes[3];
  trace.split(tiled, f, {plan.threads_f, plan.per_f});
  trace.split(tiled, y, {plan.threads_y, plan.per_y});
  trace.split(tiled, x, {plan.threads_x, plan.per_x});
  std::vector<std::string> blocks_z{n};
  if (split) blocks_z.push_back(acc_axes.front());
  blocks_z.push_back(split_part(f, 0));
  std::vector<std::string> order = blocks_z;
  for (const auto& o : {split_part(y, 0), split_part(x, 0), split_part(f, 1), split_part(y, 1), split_part(x, 1),
                        split_part(f, 2), split_part(y, 2), split_part(x, 2)})
    order.push_back(o);
  trace.reorder(tiled, order);
  trace.fuse(tiled, blocks_z);
  trace.bind(tiled, fused_name(blocks_z), Annotation::BlockZ);
  trace.bind(tiled, split_part(y, 0), Annotation::BlockY);
  trace.bind(tiled, split_part(x, 0), Annotation::BlockX);
  trace.bind(tiled, split_part(f, 1), Annotation::ThreadZ);
  trace.bind(tiled, split_part(y, 1), Annotation::ThreadY);
  trace.bind(tiled, split_part(x, 1), Annotation::ThreadX);
  for (int part : {0, 1, 2}) trace.unroll(tiled, split_part(axes[1 + part], 2));
  trace.compute_at(acc, tiled, split_part(x, 1));

  // The accumulator: input channels in steps of step_rc, the window's taps
  // and the step's channels inside, the thread's outputs innermost.
  trace.split(acc, rc, {plan.step_rc});
  std::vector<std::string> acc_order{split_part(rc, 0), ry, rx, split_part(rc, 1)};
  acc_order.insert(acc_order.end(), acc_axes.begin(), acc_axes.end());
  trace.reorder(acc, acc_order);
  for (const auto& operand : conv->inputs()) {
    trace.cache_read(acc, operand->name, {0, 1, 2, 3}, "shared");
    const std::string copy = cache_read_name(operand->name);
    std::vector<std::string> copy_axes;
    for (size_t d = 0; d < 4; ++d) copy_axes.push_back(cache_read_axis(d));
    trace.compute_at(copy, acc, split_part(rc, 0));
    trace.fuse(copy, copy_axes);
    const std::string fused = fused_name(copy_axes);
    trace.split(copy, fused, {plan.threads_f, plan.threads_y, plan.threads_x});
    trace.bind(copy, split_part(fused, 1), Annotation::ThreadZ);
    trace.bind(copy, split_part(fused, 2), Annotation::ThreadY);
    trace.bind(copy, split_part(fused, 3), Annotation::ThreadX);
  }
  // Registers hold the accumulators only when their indices are constants.
  for (const auto& a : acc_axes) trace.unroll(acc, a);
  trace.unroll(acc, split_part(rc, 1));
  if (plan.auto_unroll > 0)
    trace.pragma(acc, split_part(rc, 0), "auto_unroll_max_step$" + std::to_string(plan.auto_unroll));

  // Split: the second kernel, a thread per output adding its partial sums
  // (the epilogue's stages are inlined into the output).
  if (split) add_partial_sums(trace, conv, out, max_threads);
  return trace;
}

GpuDepthwisePlan gpu_depthwise_plan(const std::vector<int64_t>& out) {
  GpuDepthwisePlan p;
  p.threads_x = dividing_threads(out[3], 4, 32);
  p.threads_y = std::min<int64_t>(dividing_threads(out[2], 2, 8), std::max<int64_t>(1, 256 / p.threads_x));
  return p;
}

namespace {

// The DAG's 4-D stage tagged `tag` (the last) and the output of its shape
// that writes it, or nothing.
std::optional<std::pair<ir::Tensor, ir::Tensor>> image_stage_and_output(const ir::ComputeDAG& dag,
                                                                        const std::string& tag) {
  ir::Tensor stage;
  for (const auto& t : dag.tensors())
    if (t->tag == tag) stage = t;
  if (!stage || stage->shape.size() != 4) return std::nullopt;
  ir::Tensor out = output_of_shape(dag, stage);
  if (!out) return std::nullopt;
  return std::pair{stage, out};
}

}  // namespace

std::optional<Trace> gpu_depthwise_schedule(const ir::ComputeDAG& dag, int max_threads,
                                            const std::optional<GpuDepthwisePlan>& given) {
  const auto found = image_stage_and_output(dag, "depthwise_conv2d_nchw");
  if (!found) return std::nullopt;
  const auto& [conv, out] = *found;
  const GpuDepthwisePlan plan = given ? *given : gpu_depthwise_plan(conv->shape);
  if (plan.threads_y * plan.threads_x > max_threads) return std::nullopt;

  Trace trace;  // the padding is read through the window
  const std::optional<std::string> accumulator = inline_around(dag, conv, out, trace);
  if (!accumulator) return std::nullopt;
  const std::string acc = *accumulator;
  const std::vector<std::string> axes = spatial_names(out);
  const std::string n = axes[0], c = axes[1], y = axes[2], x = axes[3];
  trace.split(out->name, y, {plan.threads_y, plan.per_y});
  trace.split(out->name, x, {plan.threads_x, plan.per_x});
  trace.reorder(out->name, {n, c, split_part(y, 0), split_part(x, 0), split_part(y, 1), split_part(x, 1),
                            split_part(y, 2), split_part(x, 2)});
  trace.fuse(out->name, {n, c});
  trace.bind(out->name, fused_name({n, c}), Annotation::BlockZ);
  trace.bind(out->name, split_part(y, 0), Annotation::BlockY);
  trace.bind(out->name, split_part(x, 0), Annotation::BlockX);
  trace.bind(out->name, split_part(y, 1), Annotation::ThreadY);
  trace.bind(out->name, split_part(x, 1), Annotation::ThreadX);
  trace.unroll(out->name, split_part(y, 2));
  trace.unroll(out->name, split_part(x, 2));
  trace.compute_at(acc, out->name, split_part(x, 1));
  for (const auto& r : conv->reduce_axes) trace.unroll(acc, r.var.name());
  for (const auto& a : spatial_names(conv)) trace.unroll(acc, a);
  return trace;
}

GpuDepthwiseNhwcPlan gpu_depthwise_nhwc_plan(const std::vector<int64_t>& out) {
  GpuDepthwiseNhwcPlan p;
  p.threads_c = dividing_threads(out[3], 8, 32);
  p.threads_x = std::min<int64_t>(dividing_threads(out[2], 1, 8), std::max<int64_t>(1, 256 / p.threads_c));
  return p;
}

std::optional<Trace> gpu_depthwise_nhwc_schedule(const ir::ComputeDAG& dag, int max_threads) {
  const auto found = image_stage_and_output(dag, "depthwise_conv2d_nhwc");
  if (!found) return std::nullopt;
  const auto& [conv, out] = *found;
  const GpuDepthwiseNhwcPlan plan = gpu_depthwise_nhwc_plan(conv->shape);
  if (plan.threads_c * plan.threads_x > max_threads) return std::nullopt;

  Trace trace;  // the padding is read through the window
  const std::optional<std::string> accumulator = inline_around(dag, conv, out, trace);
  if (!accumulator) return std::nullopt;
  const std::vector<std::string> axes = spatial_names(out);
  const std::string n = axes[0], y = axes[1], x = axes[2], c = axes[3];
  trace.split(out->name, x, {plan.threads_x});
  trace.split(out->name, c, {plan.threads_c});
  trace.reorder(out->name, {n, y, split_part(x, 0), split_part(c, 0), split_part(x, 1), split_part(c, 1)});
  trace.fuse(out->name, {n, y});
  trace.bind(out->name, fused_name({n, y}), Annotation::BlockZ);
  trace.bind(out->name, split_part(x, 0), Annotation::BlockY);
  trace.bind(out->name, split_part(c, 0), Annotation::BlockX);
  trace.bind(out->name, split_part(x, 1), Annotation::ThreadY);
  trace.bind(out->name, split_part(c, 1), Annotation::ThreadX);
  trace.compute_at(*accumulator, out->name, split_part(c, 1));
  for (const auto& r : conv->reduce_axes) trace.unroll(*accumulator, r.var.name());
  for (const auto& a : spatial_names(conv)) trace.unroll(*accumulator, a);
  return trace;
}

namespace {

ir::Tensor tagged(const ir::ComputeDAG& dag, const std::string& tag) {
  for (const auto& t : dag.tensors())
    if (t->tag == tag) return t;
  return nullptr;
}

// Threads (up to 16) x outputs per thread (up to 4, never more than the
// threads) along an axis of n: the largest tile dividing n (more threads on
// a tie), so that no block computes a ragged edge and the template's
// divisor splits hold it; where no tile of 4 or more divides n (a prime),
// powers of two within n, the edge guarded.
std::pair<int64_t, int64_t> axis_tile(int64_t n) {
  std::pair<int64_t, int64_t> best{1, 1};
  for (int64_t per = 1; per <= 4; ++per)
    for (int64_t threads = per; threads <= 16; ++threads) {
      const int64_t tile = threads * per, best_tile = best.first * best.second;
      if (n % tile == 0 && (tile > best_tile || (tile == best_tile && threads > best.first))) best = {threads, per};
    }
  if (best.first * best.second >= 4 || n < 4) return best;
  const int64_t per = n >= 64 ? 4 : n >= 16 ? 2 : 1;
  int64_t threads = 16;
  while (threads > 1 && threads * per > n) threads /= 2;
  return {threads, per};
}

}  // namespace

GpuMatmulPlan gpu_winograd_plan(const ir::ComputeDAG& dag) {
  GpuMatmulPlan p;
  const ir::Tensor product = tagged(dag, "winograd_bgemm");
  if (!product) return p;
  const int64_t rows = product->shape[1], cols = product->shape[2], channels = product->reduce_axes[0].extent;
  std::tie(p.threads_y, p.rows) = axis_tile(rows);
  std::tie(p.threads_x, p.cols) = axis_tile(cols);
  p.step_k = channels % 8 == 0 ? 8 : channels % 4 == 0 ? 4 : 1;
  return gpu_matmul_split(dag, p);
}

std::optional<Trace> gpu_winograd_schedule(const ir::ComputeDAG& dag, int max_threads, const GpuMatmulPlan& plan) {
  const ir::Tensor pack = tagged(dag, "winograd_data_pack"), product = tagged(dag, "winograd_bgemm");
  const ir::Tensor inverse = tagged(dag, "conv2d_winograd_nchw");
  if (!pack || !product || !inverse || dag.outputs().size() != 1 || pack->shape.size() != 3) return std::nullopt;
  if (max_threads < plan.threads_y * plan.threads_x) return std::nullopt;
  if (product->shape[1] < plan.threads_y * plan.rows || product->shape[2] < plan.threads_x * plan.cols)
    return std::nullopt;
  const ir::Tensor out = dag.outputs()[0];
  const int64_t m = std::stoll(inverse->attrs.at("tile"));
  Trace trace;
  for (const auto& t : dag.tensors())
    if (!t->is_placeholder() && t != pack && t != product && t != out) {
      if (t->is_reduction()) return std::nullopt;
      trace.compute_inline(t->name);  // the padding; the inverse transform into the epilogue
    }

  // The input transform: a thread per (channel, tile), consecutive threads
  // consecutive tiles, its alpha^2 elements unrolled.
  const std::vector<std::string> p = spatial_names(pack);  // ab, c, tile
  trace.reorder(pack->name, {p[1], p[2], p[0]});
  trace.fuse(pack->name, {p[1], p[2]});
  const std::string tiles = fused_name({p[1], p[2]});
  trace.split(pack->name, tiles, {gpu_block_threads(pack->shape[1] * pack->shape[2], max_threads)});
  trace.bind(pack->name, split_part(tiles, 0), Annotation::BlockX);
  trace.bind(pack->name, split_part(tiles, 1), Annotation::ThreadX);
  trace.unroll(pack->name, p[0]);

  // The alpha^2 products: tiled as a batch_matmul's, the batch on blockIdx.z.
  if (plan.split_k > 1) {
    const std::optional<std::string> partial_sums = split_reduction(trace, product, plan.split_k);
    if (!partial_sums) return std::nullopt;
    tile_product(trace, product, product, *partial_sums, plan, false);
    add_partial_sums(trace, product, product, max_threads);
  } else {
    trace.cache_write(product->name, "local");
    tile_product(trace, product, product, cache_write_name(product->name), plan, false);
  }

  // The output transform with the epilogue: a thread per m x m output tile
  // (its positions unrolled, so that the transform's select folds).
  const std::vector<std::string> o = spatial_names(out);  // n, f, y, x
  trace.split(out->name, o[2], {m});
  trace.split(out->name, o[3], {m});
  const std::vector<std::string> whole = {o[0], o[1], split_part(o[2], 0), split_part(o[3], 0)};
  trace.reorder(out->name, {o[0], o[1], split_part(o[2], 0), split_part(o[3], 0), split_part(o[2], 1),
                            split_part(o[3], 1)});
  trace.fuse(out->name, whole);
  const std::string all = fused_name(whole);
  trace.split(out->name, all, {gpu_block_threads(out->shape[0] * out->shape[1] * ((out->shape[2] + m - 1) / m) *
                                                     ((out->shape[3] + m - 1) / m),
                                                 max_threads)});
  trace.bind(out->name, split_part(all, 0), Annotation::BlockX);
  trace.bind(out->name, split_part(all, 1), Annotation::ThreadX);
  trace.unroll(out->name, split_part(o[2], 1));
  trace.unroll(out->name, split_part(o[3], 1));
  return trace;
}

namespace {

// A tile of one of attention's products: axis_tile's along its rows and
// columns, then fewer outputs a thread (rows first) while the blocks are
// fewer than kSplitReductionBlocks; its reduction staged 8 (else 4, else 1)
// at a time.
GpuMatmulPlan attention_product_plan(int64_t batch, int64_t rows, int64_t cols, int64_t depth) {
  GpuMatmulPlan p;
  std::tie(p.threads_y, p.rows) = axis_tile(rows);
  std::tie(p.threads_x, p.cols) = axis_tile(cols);
  auto blocks = [&] {
    return batch * tiles_along(rows, p.threads_y * p.rows) * tiles_along(cols, p.threads_x * p.cols);
  };
  while (blocks() < kSplitReductionBlocks && (p.rows > 1 || p.cols > 1)) {
    if (p.rows >= p.cols)
      p.rows /= 2;
    else
      p.cols /= 2;
  }
  p.step_k = depth % 8 == 0 ? 8 : depth % 4 == 0 ? 4 : 1;
  return p;
}

}  // namespace

std::optional<Trace> gpu_attention_schedule(const ir::ComputeDAG& dag, int max_threads) {
  const ir::Tensor out = dag.outputs().size() == 1 ? dag.outputs()[0] : nullptr;
  if (!out || out->tag != "attention") return std::nullopt;
  const ir::Tensor scores = tagged(dag, "attention_scores"), values = tagged(dag, "attention_values");
  if (!scores || !values || scores->shape.size() != 3 || values->shape.size() != 4) return std::nullopt;
  const int64_t batch = scores->shape[0], m = scores->shape[1], n = scores->shape[2];
  const int64_t tiles = values->shape[2], d = values->shape[3], keys = values->reduce_axes[0].extent;
  const GpuMatmulPlan score_plan = attention_product_plan(batch, m, n, scores->reduce_axes[0].extent);
  const GpuMatmulPlan value_plan = attention_product_plan(batch * tiles, m, d, keys);
  for (const GpuMatmulPlan& p : {score_plan, value_plan})
    if (p.threads_y * p.threads_x > max_threads) return std::nullopt;
  Trace trace;
  std::vector<ir::Tensor> per_thread;
  for (const auto& t : dag.tensors()) {
    if (t->is_placeholder()) continue;
    if (t == scores || t == values) {
      // Each product in tiles of a block, staged through shared memory; the
      // values' rows are their queries (axis 1), beside the key tiles.
      trace.cache_write(t->name, "local");
      tile_product(trace, t, t, cache_write_name(t->name), t == scores ? score_plan : value_plan, false,
                   t == values ? std::optional<size_t>(1) : std::nullopt);
    } else if (t->tag == "attention_tile_softmax" && t->is_reduction()) {
      // A key tile's maximum and sum: a block per row, its threads reading
      // consecutive scores (one thread a row read the rows a row apart,
      // a warp's load 32 transactions).
      bind_cross_thread(trace, t, max_threads);
    } else if (t->tag == "attention_tile_softmax") {
      // The probabilities computed where the values' blocks fetch them into
      // shared memory (each element once a block of the head's columns):
      // no kernel of their own, no round trip through device memory.
      trace.compute_inline(t->name);
    } else if (t->tag == "attention_combine") {
      // The key tiles combined in the output's threads: each computes its
      // row's maximum, the tiles' weights and their sum again, over the few
      // key tiles (one at up to kWholeRowKeys keys), instead of three more
      // kernels.
      if (t->is_reduction())
        per_thread.push_back(t);
      else
        trace.compute_inline(t->name);
    } else {
      bind_elementwise(trace, t, max_threads);  // the keys transposed (a layout copy), and the output
    }
  }
  // Consumers first: a stage moves into the output's threads once what reads it is there.
  for (auto t = per_thread.rbegin(); t != per_thread.rend(); ++t)
    trace.compute_at((*t)->name, out->name, elementwise_thread(out));
  return trace;
}

std::optional<Trace> gpu_rows_schedule(const ir::ComputeDAG& dag, int max_threads) {
  if (dag.outputs().size() != 1) return std::nullopt;
  const ir::Tensor out = dag.outputs()[0];
  if (out->is_reduction()) return std::nullopt;
  // The reductions: over the output's trailing axes from `row_rank` on, each
  // of the output's leading axes' shape.
  std::vector<ir::Tensor> reductions;
  size_t row_rank = 0;
  for (const auto& t : dag.tensors())
    if (t->is_reduction()) {
      if (reductions.empty()) row_rank = t->shape.size();
      const std::vector<int64_t> rows(out->shape.begin(), out->shape.begin() + std::min(row_rank, out->shape.size()));
      if (t->shape.size() != row_rank || t->shape != rows) return std::nullopt;
      reductions.push_back(t);
    }
  if (reductions.empty() || row_rank == 0 || row_rank >= out->shape.size()) return std::nullopt;
  int64_t length = 1;
  for (size_t d = row_rank; d < out->shape.size(); ++d) length *= out->shape[d];
  for (const auto& r : reductions)
    if (reduce_length(r) != length) return std::nullopt;
  if (length < kCrossThreadMinReduce) return std::nullopt;  // a thread a row does better
  int64_t threads = 32;
  while (threads * 2 <= std::min<int64_t>({length, 256, max_threads})) threads *= 2;

  Trace trace;
  for (const auto& t : dag.tensors())
    if (!t->is_placeholder() && !t->is_reduction() && t != out) trace.compute_inline(t->name);
  // The output: a block per row, its threads along the row (consecutive
  // threads, consecutive elements).
  std::vector<std::string> axes = spatial_names(out);
  const std::vector<std::string> row_axes(axes.begin(), axes.begin() + static_cast<std::ptrdiff_t>(row_rank));
  const std::vector<std::string> element_axes(axes.begin() + static_cast<std::ptrdiff_t>(row_rank), axes.end());
  auto fused = [&](const std::string& stage, const std::vector<std::string>& names) {
    if (names.size() == 1) return names[0];
    trace.fuse(stage, names);
    return fused_name(names);
  };
  const std::string row = fused(out->name, row_axes), element = fused(out->name, element_axes);
  trace.split(out->name, element, {threads});
  trace.reorder(out->name, {row, split_part(element, 1), split_part(element, 0)});
  trace.bind(out->name, row, Annotation::BlockX);
  trace.bind(out->name, split_part(element, 1), Annotation::ThreadX);
  // Each reduction in the row's block, its threads reducing together into
  // shared memory, which every thread then reads (consumers first: a stage
  // moves into the block once what reads it is there).
  for (auto r = reductions.rbegin(); r != reductions.rend(); ++r) {
    const std::string stage = (*r)->name, shared = cache_write_name(stage);
    trace.cache_write(stage, "shared");
    trace.compute_inline(stage);
    std::vector<std::string> reduce;
    for (const auto& k : (*r)->reduce_axes) reduce.push_back(k.var.name());
    const std::string k = fused(shared, reduce);
    trace.split(shared, k, {threads});
    // The threads outside the steps along the row: a ragged last step's
    // bound then guards the step inside its loop.
    std::vector<std::string> order = spatial_names(*r);
    order.push_back(split_part(k, 1));
    order.push_back(split_part(k, 0));
    trace.reorder(shared, order);
    trace.bind(shared, split_part(k, 1), Annotation::ThreadX);
    trace.compute_at(shared, out->name, row);
  }
  return trace;
}

Trace best_gpu_schedule(const ir::ComputeDAG& dag, const GpuBlockLimits& limits) {
  const auto conv_product = std::find_if(dag.tensors().begin(), dag.tensors().end(), is_conv_product);
  const bool nhwc = conv_product != dag.tensors().end() && (*conv_product)->tag == "conv2d_nhwc_gemm";
  // An NHWC convolution's product has the channels as its columns: as many
  // threads along them (of 16, 8, ..., 4 columns each) as give tiles that
  // divide them (MobileNet-v2's 96 and 144: 8 and 4), so that no tile's
  // edge is guarded, where some do.
  const int64_t channels = nhwc && dag.outputs().size() == 1 ? dag.outputs()[0]->shape.back() : 0;
  for (int64_t threads = 16; channels > 0 && threads >= 1; threads /= 2) {
    if (channels % (threads * 4) != 0) continue;
    GpuMatmulPlan plan;
    plan.threads_x = threads;
    if (auto t = gpu_matmul_schedule(dag, limits.max_threads, gpu_matmul_split(dag, plan))) return *t;
    break;
  }
  if (auto t = gpu_matmul_schedule(dag, limits.max_threads, gpu_matmul_split(dag, {}))) return *t;
  // A convolution's product with fewer than 64 output channels (16 of
  // MobileNet's): fewer threads along them (its rows in NCHW, its columns
  // in NHWC), still tiled.
  for (int64_t threads = 8; conv_product != dag.tensors().end() && threads >= 1; threads /= 2) {
    GpuMatmulPlan plan;
    (nhwc ? plan.threads_x : plan.threads_y) = threads;
    if (auto t = gpu_matmul_schedule(dag, limits.max_threads, gpu_matmul_split(dag, plan))) return *t;
  }
  if (auto t = gpu_winograd_schedule(dag, limits.max_threads, gpu_winograd_plan(dag))) return *t;
  if (auto t = gpu_conv2d_schedule(dag, limits.max_threads, limits.max_shared_bytes)) return *t;
  if (auto t = gpu_depthwise_schedule(dag, limits.max_threads)) return *t;
  if (auto t = gpu_depthwise_nhwc_schedule(dag, limits.max_threads)) return *t;
  if (auto t = gpu_attention_schedule(dag, limits.max_threads)) return *t;
  if (auto t = gpu_rows_schedule(dag, limits.max_threads)) return *t;
  return gpu_default_schedule(dag, limits.max_threads);
}

}  // namespace tessera::schedule
