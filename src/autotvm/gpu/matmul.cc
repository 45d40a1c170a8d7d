// dense.gpu and batch_matmul.gpu: C = A (M, K) . W (N, K)^T (W stored (N, K)
// or packed (N/bn, K, bn), as a network's dense holds it), or the batched
// (B, M, K) . (B, N, K)^T; conv2d_nchw_implicit_gemm.gpu: a convolution's
// product, weights (F, C*KH*KW) . columns (C*KH*KW, N*OH*OW), each thread
// writing its outputs straight into the NCHW image; with the epilogue, as
// schedule::gpu_matmul_schedule writes them: a block's tile of M x N split
// into threads x per-thread outputs along each axis (tile_y, tile_x), K
// as [steps, partial sums, staged in shared memory a step] (tile_k; each of
// the partial sums, split-K, reduces a range of K in blocks of its own, a
// second kernel adds them); auto_unroll_max_step how far the accumulator's
// loops are unrolled beyond the register tiles; pipeline_fetches whether
// the next step's operands are loaded while this one computes
// (tir/pipeline_fetches.h; records from before it read as 0). A config
// whose block has more threads than the target allows, or more shared
// memory, is a build error (the GPU verifier's line), as a measurement says.
#include "autotvm/gpu/gpu_templates.h"
#include "schedule/gpu_schedule.h"
#include "schedule/nchwc_tile.h"
#include "schedule/pipelined_steps.h"
#include "tessera/error.h"

namespace tessera::autotvm::gpu {

schedule::GpuMatmulPlan matmul_plan_of(const ConfigEntity& c) {
  const auto y = c.split("tile_y"), x = c.split("tile_x"), k = c.split("tile_k");
  return {.threads_y = y.at(1),
          .threads_x = x.at(1),
          .rows = y.at(2),
          .cols = x.at(2),
          .step_k = k.at(2),
          .split_k = k.at(1),
          .auto_unroll = c.value("auto_unroll_max_step").get<int64_t>()};
}

void define_matmul_space(ConfigSpace& s, int64_t m, int64_t n, int64_t k) {
  s.define_split("tile_y", m, SplitPolicy::Factors, 3, 32);
  s.define_split("tile_x", n, SplitPolicy::Factors, 3, 32);
  s.define_split("tile_k", k, SplitPolicy::Factors, 3, 32);
  s.define_knob("auto_unroll_max_step", {0, 512, 1500});
  define_pipeline_knob(s);
}

void define_pipeline_knob(ConfigSpace& s) { s.define_knob("pipeline_fetches", {0, 1}, /*added_later=*/true); }

schedule::Trace with_pipeline_knob(schedule::Trace trace, const ConfigEntity& c) {
  return c.value("pipeline_fetches").get<int>() == 1 ? schedule::pipelined_steps(trace) : trace;
}

namespace {

// The product stage of a dense (either weight layout), batch_matmul or
// implicit-GEMM convolution workload.
ir::Tensor product_of(const ir::ComputeDAG& dag, const std::string& who) {
  for (const auto& t : dag.tensors())
    if (t->tag == "dense" || t->tag == "dense_pack" || t->tag == "batch_matmul" || schedule::is_conv_product(t))
      return t;
  return schedule::stage_by_tag(dag, "dense", who);  // throws naming what is missing
}

Template matmul_template(const std::string& name, std::function<bool(const std::string&, const ops::OpArgs&)> matches) {
  Template t;
  t.name = name;
  t.target_kind = "gpu";
  t.matches = std::move(matches);
  t.declare = [](const ops::OpArgs& args, const target::Target&) { return args; };
  t.define_space = [name](const ops::Workload& w, const target::Target&) {
    const ir::Tensor product = product_of(w.dag, name);
    const size_t rank = product->shape.size();
    const int64_t m = product->shape[rank - 2], n = product->shape[rank - 1], k = product->reduce_axes[0].extent;
    ConfigSpace s;
    define_matmul_space(s, m, n, k);
    // The hand-written tile where the shape takes it: 16 x 16 threads of 4 x 4.
    const int64_t split = schedule::gpu_matmul_split(w.dag, {}).split_k;
    if (m % 64 == 0 && n % 64 == 0 && k % (8 * split) == 0)
      s.set_fallback(
          {{"tile_y", {m / 64, 16, 4}}, {"tile_x", {n / 64, 16, 4}}, {"tile_k", {k / 8 / split, split, 8}}});
    return s;
  };
  t.apply = [name](const ops::Workload& w, const target::Target&, const ConfigEntity& c) {
    // A GPU block's threads: the verifier checks them against the target;
    // 1024 lets every config through to it.
    if (auto trace = schedule::gpu_matmul_schedule(w.dag, 1024, matmul_plan_of(c)))
      return with_pipeline_knob(*trace, c);
    throw Error(name + ": the product is smaller than one tile of the config");
  };
  return t;
}

}  // namespace

Template dense_template() {
  return matmul_template("dense.gpu", [](const std::string& op, const ops::OpArgs& args) {
    return op == "dense" && (args.layout == "NCHW" || args.layout == "NK" || args.layout == "packed");
  });
}

Template batch_matmul_template() {
  return matmul_template("batch_matmul.gpu",
                         [](const std::string& op, const ops::OpArgs&) { return op == "batch_matmul"; });
}

Template conv2d_nchw_implicit_gemm_template() {
  return matmul_template("conv2d_nchw_implicit_gemm.gpu", [](const std::string& op, const ops::OpArgs&) {
    return op == "conv2d_nchw_implicit_gemm";
  });
}

Template conv2d_nhwc_implicit_gemm_template() {
  return matmul_template("conv2d_nhwc_implicit_gemm.gpu", [](const std::string& op, const ops::OpArgs&) {
    return op == "conv2d_nhwc_implicit_gemm";
  });
}

}  // namespace tessera::autotvm::gpu
