// dense.gpu: C = A (M, K) . W (N, K)^T with its epilogue, as
// schedule::gpu_matmul_schedule writes it: a block's tile of M x N split into
// threads x per-thread outputs along each axis (tile_y, tile_x), K staged in
// shared memory tile_k at a time. A config whose block has more threads than
// the target allows, or more shared memory, is a build error (the GPU
// verifier's line), as a measurement says.
#include "autotvm/gpu/gpu_templates.h"
#include "schedule/nchwc_tile.h"
#include "schedule/gpu_schedule.h"
#include "tessera/error.h"

namespace tessera::autotvm::gpu {

namespace {

schedule::GpuMatmulPlan plan_of(const ConfigEntity& c) {
  const auto y = c.split("tile_y"), x = c.split("tile_x"), k = c.split("tile_k");
  return {.threads_y = y.at(1), .threads_x = x.at(1), .rows = y.at(2), .cols = x.at(2), .step_k = k.at(1)};
}

}  // namespace

Template dense_template() {
  Template t;
  t.name = "dense.gpu";
  t.target_kind = "gpu";
  t.matches = [](const std::string& op, const ops::OpArgs& args) {
    return op == "dense" && (args.layout == "NCHW" || args.layout == "NK");
  };
  t.declare = [](const ops::OpArgs& args, const target::Target&) { return args; };
  t.define_space = [](const ops::Workload& w, const target::Target&) {
    const ir::Tensor dense = schedule::stage_by_tag(w.dag, "dense", "dense.gpu");
    const int64_t m = dense->shape[0], n = dense->shape[1], k = dense->reduce_axes[0].extent;
    ConfigSpace s;
    s.define_split("tile_y", m, SplitPolicy::Factors, 3, 32);
    s.define_split("tile_x", n, SplitPolicy::Factors, 3, 32);
    s.define_split("tile_k", k, SplitPolicy::Factors, 2, 32);
    // The hand-written tile where the shape takes it: 16 x 16 threads of 4 x 4.
    if (m % 64 == 0 && n % 64 == 0 && k % 8 == 0)
      s.set_fallback({{"tile_y", {m / 64, 16, 4}}, {"tile_x", {n / 64, 16, 4}}, {"tile_k", {k / 8, 8}}});
    return s;
  };
  t.apply = [](const ops::Workload& w, const ConfigEntity& c) {
    // A GPU block's threads: the verifier checks them against the target;
    // 1024 lets every config through to it.
    if (auto trace = schedule::gpu_matmul_schedule(w.dag, 1024, plan_of(c))) return *trace;
    throw Error("dense.gpu: the product is smaller than one tile of the config");
  };
  return t;
}

}  // namespace tessera::autotvm::gpu
