// conv2d_nchw.gpu: a direct NCHW convolution and its epilogue as
// schedule::gpu_conv2d_schedule writes it. Knobs as TVM's CUDA direct
// template names them: tile_f, tile_y, tile_x split the output channels,
// rows and columns into blocks x threads x outputs per thread; tile_rc the
// input channels into [steps, partial sums, channels staged in shared
// memory a step]: each of the partial sums (split-K; 1: none) reduces a
// range of steps x staged channels in blocks of its own, a second kernel
// adds them (TVM's tile_rc has no middle part); auto_unroll_max_step how
// far the accumulator's inner loops (the window, the staged channels) are
// unrolled beyond the register tiles; pipeline_fetches whether the next
// step's window and weights are loaded while this one computes
// (tir/pipeline_fetches.h; records from before it read as 0). A
// config no block holds (threads, shared bytes) is a build error, the GPU
// verifier's line.
#include <limits>

#include "autotvm/gpu/gpu_templates.h"
#include "schedule/gpu_schedule.h"
#include "schedule/nchwc_tile.h"
#include "tessera/error.h"

namespace tessera::autotvm::gpu {

namespace {

schedule::GpuConvPlan plan_of(const ConfigEntity& c) {
  const auto f = c.split("tile_f"), y = c.split("tile_y"), x = c.split("tile_x"), rc = c.split("tile_rc");
  schedule::GpuConvPlan p;
  p.threads_f = f.at(1), p.per_f = f.at(2);
  p.threads_y = y.at(1), p.per_y = y.at(2);
  p.threads_x = x.at(1), p.per_x = x.at(2);
  p.split_rc = rc.at(1), p.step_rc = rc.at(2);
  p.auto_unroll = c.value("auto_unroll_max_step").get<int64_t>();
  return p;
}

}  // namespace

Template conv2d_nchw_template() {
  Template t;
  t.name = "conv2d_nchw.gpu";
  t.target_kind = "gpu";
  t.matches = [](const std::string& op, const ops::OpArgs& a) {
    return op == "conv2d" && a.layout == "NCHW" && a.groups == 1 && a.input.size() == 4 && a.weight.size() == 4 &&
           a.weight[1] == a.input[1];
  };
  t.declare = [](const ops::OpArgs& args, const target::Target&) { return args; };
  t.define_space = [](const ops::Workload& w, const target::Target&) {
    const ir::Tensor conv = schedule::stage_by_tag(w.dag, "conv2d_nchw", "conv2d_nchw.gpu");
    const int64_t f = conv->shape[1], h = conv->shape[2], wd = conv->shape[3], c = conv->reduce_axes[0].extent;
    ConfigSpace s;
    s.define_split("tile_f", f, SplitPolicy::Factors, 3, 64);
    s.define_split("tile_y", h, SplitPolicy::Factors, 3, 16);
    s.define_split("tile_x", wd, SplitPolicy::Factors, 3, 32);
    s.define_split("tile_rc", c, SplitPolicy::Factors, 3, 32);
    s.define_knob("auto_unroll_max_step", {0, 512, 1500});
    define_pipeline_knob(s);
    // The hand-written plan where its tiles divide the output exactly.
    const int64_t taps = conv->reduce_axes[1].extent * conv->reduce_axes[2].extent;
    const schedule::GpuConvPlan p = schedule::gpu_conv_plan(conv->shape, c, 1024, taps);
    const int64_t tile_f = p.threads_f * p.per_f, tile_y = p.threads_y * p.per_y, tile_x = p.threads_x * p.per_x;
    const int64_t range = p.split_rc * p.step_rc;
    if (f % tile_f == 0 && h % tile_y == 0 && wd % tile_x == 0 && c % range == 0)
      s.set_fallback({{"tile_f", {f / tile_f, p.threads_f, p.per_f}},
                      {"tile_y", {h / tile_y, p.threads_y, p.per_y}},
                      {"tile_x", {wd / tile_x, p.threads_x, p.per_x}},
                      {"tile_rc", {c / range, p.split_rc, p.step_rc}}});
    return s;
  };
  t.apply = [](const ops::Workload& w, const target::Target&, const ConfigEntity& c) {
    // Every config reaches the verifier, which holds it to the target's block.
    if (auto trace = schedule::gpu_conv2d_schedule(w.dag, 1024, std::numeric_limits<int64_t>::max(), plan_of(c)))
      return with_pipeline_knob(*trace, c);
    throw Error("conv2d_nchw.gpu: a block of more than 1024 threads, or a DAG with no direct convolution");
  };
  return t;
}

}  // namespace tessera::autotvm::gpu
