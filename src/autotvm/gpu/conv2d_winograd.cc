// conv2d_nchw_winograd.gpu: 3x3 stride-1 convolutions by Winograd's
// F(m x m, 3 x 3) in NCHW (ops/winograd.h), as schedule::gpu_winograd_schedule
// writes them. The knobs are those of the alpha^2 matrix products (output
// channels x tiles, reduced over the input channels): tile_y the channels,
// tile_x the tiles, tile_k the staged input channels, auto_unroll_max_step,
// pipeline_fetches; the transforms are a thread per tile each. A config no block holds is a
// build error, the GPU verifier's line.
#include "autotvm/gpu/gpu_templates.h"
#include "schedule/nchwc_tile.h"
#include "tessera/error.h"

namespace tessera::autotvm::gpu {

Template conv2d_nchw_winograd_template() {
  Template t;
  t.name = "conv2d_nchw_winograd.gpu";
  t.target_kind = "gpu";
  t.matches = [](const std::string& op, const ops::OpArgs&) { return op == "conv2d_nchw_winograd"; };
  t.declare = [](const ops::OpArgs& args, const target::Target&) { return args; };
  t.define_space = [](const ops::Workload& w, const target::Target&) {
    const ir::Tensor product = schedule::stage_by_tag(w.dag, "winograd_bgemm", "conv2d_nchw_winograd.gpu");
    ConfigSpace s;
    define_matmul_space(s, product->shape[1], product->shape[2], product->reduce_axes[0].extent);
    // The hand-written plan where its tiles divide the products exactly.
    const schedule::GpuMatmulPlan p = schedule::gpu_winograd_plan(w.dag);
    const int64_t rows = product->shape[1], cols = product->shape[2], k = product->reduce_axes[0].extent;
    const int64_t tile_y = p.threads_y * p.rows, tile_x = p.threads_x * p.cols;
    if (rows % tile_y == 0 && cols % tile_x == 0 && k % (p.step_k * p.split_k) == 0)
      s.set_fallback({{"tile_y", {rows / tile_y, p.threads_y, p.rows}},
                      {"tile_x", {cols / tile_x, p.threads_x, p.cols}},
                      {"tile_k", {k / p.step_k / p.split_k, p.split_k, p.step_k}}});
    return s;
  };
  t.apply = [](const ops::Workload& w, const target::Target&, const ConfigEntity& c) {
    if (auto trace = schedule::gpu_winograd_schedule(w.dag, 1024, matmul_plan_of(c)))
      return with_pipeline_knob(*trace, c);
    throw Error("conv2d_nchw_winograd.gpu: the products are smaller than one tile of the config");
  };
  return t;
}

}  // namespace tessera::autotvm::gpu
