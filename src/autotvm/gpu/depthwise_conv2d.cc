// depthwise_conv2d_nchw.gpu: a depthwise NCHW convolution (multiplier 1) and
// its epilogue as schedule::gpu_depthwise_schedule writes it; tile_y and
// tile_x split the rows and columns into blocks x threads x outputs per
// thread. A config of more threads than the target's block holds is the GPU
// verifier's build error.
#include "autotvm/gpu/gpu_templates.h"
#include "schedule/gpu_schedule.h"
#include "schedule/nchwc_tile.h"
#include "tessera/error.h"

namespace tessera::autotvm::gpu {

Template depthwise_conv2d_nchw_template() {
  Template t;
  t.name = "depthwise_conv2d_nchw.gpu";
  t.target_kind = "gpu";
  t.matches = [](const std::string& op, const ops::OpArgs& a) {
    return op == "depthwise_conv2d" && a.layout == "NCHW" && a.weight.size() == 4 && a.weight[1] == 1;
  };
  t.declare = [](const ops::OpArgs& args, const target::Target&) { return args; };
  t.define_space = [](const ops::Workload& w, const target::Target&) {
    const ir::Tensor conv = schedule::stage_by_tag(w.dag, "depthwise_conv2d_nchw", "depthwise_conv2d_nchw.gpu");
    const int64_t h = conv->shape[2], wd = conv->shape[3];
    ConfigSpace s;
    s.define_split("tile_y", h, SplitPolicy::Factors, 3, 16);
    s.define_split("tile_x", wd, SplitPolicy::Factors, 3, 32);
    // The hand-written plan where its threads divide the rows and columns.
    const schedule::GpuDepthwisePlan p = schedule::gpu_depthwise_plan(conv->shape);
    if (h % p.threads_y == 0 && wd % p.threads_x == 0)
      s.set_fallback({{"tile_y", {h / p.threads_y, p.threads_y, 1}}, {"tile_x", {wd / p.threads_x, p.threads_x, 1}}});
    return s;
  };
  t.apply = [](const ops::Workload& w, const target::Target&, const ConfigEntity& c) {
    const auto y = c.split("tile_y"), x = c.split("tile_x");
    const schedule::GpuDepthwisePlan plan{.threads_y = y.at(1), .threads_x = x.at(1), .per_y = y.at(2), .per_x = x.at(2)};
    if (auto trace = schedule::gpu_depthwise_schedule(w.dag, 1024, plan)) return *trace;
    throw Error("depthwise_conv2d_nchw.gpu: a block of more than 1024 threads, or no depthwise convolution");
  };
  return t;
}

}  // namespace tessera::autotvm::gpu
