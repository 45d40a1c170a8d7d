#include "schedule/gpu_schedule.h"

#include <algorithm>
#include <optional>

#include "schedule/iter_names.h"
#include "tessera/error.h"

namespace tessera::schedule {

namespace {

bool is_output(const ir::ComputeDAG& dag, const ir::Tensor& t) {
  const auto& outs = dag.outputs();
  return std::find(outs.begin(), outs.end(), t) != outs.end();
}

std::vector<std::string> spatial_names(const ir::Tensor& t) {
  std::vector<std::string> names;
  for (const auto& a : t->axes) names.push_back(a.var.name());
  return names;
}

// Threads per block for `elements` outputs, one each: whole warps, at most
// `max_threads` (and 256, which keeps enough blocks per multiprocessor).
int64_t block_threads(int64_t elements, int max_threads) {
  const int64_t cap = std::min<int64_t>(256, max_threads);
  return std::clamp<int64_t>((elements + 31) / 32 * 32, 32, cap);
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
  trace.split(t->name, all, {block_threads(t->num_elements(), max_threads)});
  trace.bind(t->name, split_part(all, 0), Annotation::BlockX);
  trace.bind(t->name, split_part(all, 1), Annotation::ThreadX);
}

bool is_matmul(const ir::Tensor& t) { return t->tag == "dense" || t->tag == "batch_matmul"; }

}  // namespace

Trace gpu_default_schedule(const ir::ComputeDAG& dag, int max_threads) {
  Trace trace;
  // A reduction whose result has the output's shape (a convolution before
  // its bias and activation) is computed by the output's threads, one
  // element each: one kernel, no round trip through device memory.
  const ir::Tensor out = dag.outputs().size() == 1 ? dag.outputs()[0] : nullptr;
  std::vector<ir::Tensor> per_thread;
  for (const auto& t : dag.tensors()) {
    if (t->is_placeholder()) continue;
    if (!t->is_reduction() && !is_output(dag, t) && !t->attrs.count("kept_whole")) {
      trace.compute_inline(t->name);
      continue;
    }
    if (out && t != out && t->is_reduction() && t->shape == out->shape && !t->attrs.count("kept_whole")) {
      per_thread.push_back(t);
      continue;
    }
    bind_elementwise(trace, t, max_threads);
  }
  for (const auto& t : per_thread) {
    std::vector<std::string> axes = spatial_names(out);
    trace.compute_at(t->name, out->name, split_part(axes.size() > 1 ? fused_name(axes) : axes[0], 1));
  }
  return trace;
}

std::optional<Trace> gpu_matmul_schedule(const ir::ComputeDAG& dag, int max_threads, const GpuMatmulPlan& plan) {
  if (max_threads < plan.threads_y * plan.threads_x) return std::nullopt;
  ir::Tensor product;
  for (const auto& t : dag.tensors())
    if (is_matmul(t)) product = t;
  if (!product || product->reduce_axes.size() != 1) return std::nullopt;
  const size_t rank = product->shape.size();
  if (product->shape[rank - 2] < plan.threads_y * plan.rows || product->shape[rank - 1] < plan.threads_x * plan.cols)
    return std::nullopt;

  // The output stage: the product itself, or the elementwise chain after it.
  ir::Tensor out;
  for (const auto& o : dag.outputs())
    if (o->shape == product->shape) out = o;
  if (!out) return std::nullopt;

  Trace trace;
  for (const auto& t : dag.tensors())
    if (!t->is_placeholder() && t != product && t != out) {
      if (t->is_reduction()) return std::nullopt;
      trace.compute_inline(t->name);
    }
  std::string acc = product->name;
  if (out == product) {
    trace.cache_write(product->name, "local");
    acc = cache_write_name(product->name);
  }

  // The output: blocks of threads_y * rows x threads_x * cols, threads of
  // rows x cols, batch along blockIdx.z.
  const std::vector<std::string> axes = spatial_names(out);
  const std::string i = axes[rank - 2], j = axes[rank - 1];
  trace.split(out->name, i, {plan.threads_y, plan.rows});
  trace.split(out->name, j, {plan.threads_x, plan.cols});
  std::vector<std::string> order;
  if (rank == 3) order.push_back(axes[0]);
  for (const auto& n : {split_part(i, 0), split_part(j, 0), split_part(i, 1), split_part(j, 1), split_part(i, 2),
                        split_part(j, 2)})
    order.push_back(n);
  trace.reorder(out->name, order);
  if (rank == 3) trace.bind(out->name, axes[0], Annotation::BlockZ);
  trace.bind(out->name, split_part(i, 0), Annotation::BlockY);
  trace.bind(out->name, split_part(j, 0), Annotation::BlockX);
  trace.bind(out->name, split_part(i, 1), Annotation::ThreadY);
  trace.bind(out->name, split_part(j, 1), Annotation::ThreadX);
  trace.compute_at(acc, out->name, split_part(j, 1));

  // The accumulator: K in steps of step_k, each step's operands staged in shared memory.
  const std::string k = product->reduce_axes[0].var.name();
  trace.split(acc, k, {plan.step_k});
  std::vector<std::string> acc_order{split_part(k, 0), split_part(k, 1)};
  for (const auto& n : spatial_names(product)) acc_order.push_back(n);
  trace.reorder(acc, acc_order);
  for (const auto& operand : product->inputs()) {
    std::vector<int> layout;
    for (size_t d = 0; d < operand->shape.size(); ++d) layout.push_back(static_cast<int>(d));
    trace.cache_read(acc, operand->name, layout, "shared");
    // Each thread of the block fetches its share of the slice.
    const std::string copy = cache_read_name(operand->name);
    std::vector<std::string> copy_axes;
    for (size_t d = 0; d < operand->shape.size(); ++d) copy_axes.push_back(cache_read_axis(d));
    trace.compute_at(copy, acc, split_part(k, 0));
    trace.fuse(copy, copy_axes);
    const std::string fused = fused_name(copy_axes);
    trace.split(copy, fused, {plan.threads_y, plan.threads_x});
    trace.bind(copy, split_part(fused, 1), Annotation::ThreadY);
    trace.bind(copy, split_part(fused, 2), Annotation::ThreadX);
  }
  // The rows x cols accumulators are registers only when every index is a constant.
  trace.unroll(acc, split_part(k, 1));
  trace.unroll(acc, product->axes[rank - 2].var.name());
  trace.unroll(acc, product->axes[rank - 1].var.name());
  trace.unroll(out->name, split_part(i, 2));
  trace.unroll(out->name, split_part(j, 2));
  return trace;
}

Trace best_gpu_schedule(const ir::ComputeDAG& dag, int max_threads) {
  if (auto t = gpu_matmul_schedule(dag, max_threads)) return *t;
  return gpu_default_schedule(dag, max_threads);
}

}  // namespace tessera::schedule
