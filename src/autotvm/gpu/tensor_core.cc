// dense_tensorcore.cuda, batch_matmul_tensorcore.cuda,
// conv2d_nchw_implicit_gemm_tensorcore.cuda and
// conv2d_nhwc_implicit_gemm_tensorcore.cuda: a half-storage matrix product
// on CUDA's tensor cores (sm_80 and later), scheduled as the auto-scheduler's
// tensor-core sketch writes it (autoschedule/gpu_sketch_rules.h,
// TensorCoreTiling: warps of 16 x 16 fragments accumulating in fp32 by
// mma.sync, both operands staged in shared memory per step of the
// reduction), with the sketch's open numbers as the template's knobs, in
// the spirit of TVM's *_tensorcore.cuda templates:
//   tile_y  the rows in 16-row tiles: [blocks, warps per block, fragments per warp]
//   tile_x  the columns likewise
//   tile_k  the reduction in 16-deep tiles: [steps, tiles staged per step]
//   auto_unroll_max_step (the accumulation), auto_unroll_max_step_1 (the
//   store of the fragments), vectorize_fetch_<i> (a cooperative fetch's
//   four-wide loads), pipeline_fetches (the next step's fetches loaded
//   while this one computes: tir/pipeline_fetches.h), where the sketch has
//   them.
// Products in fp32 take it on a target that allows TF32 ("cuda -tf32").
// A product the sketch does not tile (fp32 operands without TF32, a side
// that is no multiple of 16, another target) is not this template's:
// define_space refuses it and the task takes the plain GPU template
// (autotvm/task.h).
// Configs whose block holds too many threads or shared bytes are the GPU
// verifier's build errors, as in every GPU template.
#include <optional>

#include "autoschedule/sketch.h"
#include "autoschedule/tensor_core_fallback.h"
#include "autotvm/gpu/gpu_templates.h"
#include "tessera/error.h"

namespace tessera::autotvm::gpu {

namespace {

// The task's tensor-core sketch with its untuned numbers
// (autoschedule/tensor_core_fallback.h): what both the space and a config
// start from.
autoschedule::TensorCoreFallback tensor_core_fallback_of(const ops::Workload& w, const target::Target& target,
                                                        const std::string& who) {
  std::optional<autoschedule::TensorCoreFallback> f = autoschedule::tensor_core_fallback(w.dag, target);
  if (!f)
    throw Error(who + ": no tensor-core tiling of " + w.op + " on " + target.str() +
                " (it needs CUDA sm_80 or later, fp16 operands or fp32 ones on a -tf32 target, and rows, columns and "
                "reduction in multiples of 16)");
  if (!f->sketch.parallel.empty() || !f->sketch.locations.empty())
    throw Error(who + ": the tensor-core sketch has choices the template does not name");
  return std::move(*f);
}

// The knob of each tile slot: the rows, the columns, the reduction (any
// further slot by its index).
std::vector<std::string> tile_knobs(const autoschedule::Sketch& s) {
  std::vector<std::string> spatial = {"tile_y", "tile_x"}, reduce = {"tile_k"};
  std::vector<std::string> names;
  for (size_t i = 0; i < s.tiles.size(); ++i) {
    std::vector<std::string>& left = s.tiles[i].reduce ? reduce : spatial;
    names.push_back(left.empty() ? "tile_" + std::to_string(i) : left.front());
    if (!left.empty()) left.erase(left.begin());
  }
  return names;
}

std::string unroll_knob(size_t site) {
  return site == 0 ? "auto_unroll_max_step" : "auto_unroll_max_step_" + std::to_string(site);
}
std::string vectorize_knob(size_t site) { return "vectorize_fetch_" + std::to_string(site); }
std::string pipeline_knob(size_t site) {
  return site == 0 ? "pipeline_fetches" : "pipeline_fetches_" + std::to_string(site);
}

// The knobs' values of a sketch's numbers (a split lists the outer loop's
// length first, then the sketch's inner lengths).
nlohmann::json knobs_of(const autoschedule::Sketch& s, const autoschedule::SketchParams& p,
                        const std::vector<std::string>& knobs) {
  nlohmann::json f = nlohmann::json::object();
  for (size_t i = 0; i < s.tiles.size(); ++i) {
    int64_t inner = 1;
    for (int64_t length : p.tiles[i]) inner *= length;
    std::vector<int64_t> split = {s.tiles[i].extent / inner};
    split.insert(split.end(), p.tiles[i].begin(), p.tiles[i].end());
    f[knobs[i]] = split;
  }
  for (size_t i = 0; i < p.unroll.size(); ++i) f[unroll_knob(i)] = p.unroll[i];
  for (size_t i = 0; i < p.vectorize.size(); ++i) f[vectorize_knob(i)] = p.vectorize[i];
  for (size_t i = 0; i < p.pipeline.size(); ++i) f[pipeline_knob(i)] = p.pipeline[i];
  return f;
}

Template tensor_core_template(const std::string& name, const std::string& op) {
  Template t;
  t.name = name;
  t.target_kind = "cuda";
  // (fp32 on a target without TF32: define_space refuses it.)
  t.matches = [op](const std::string& o, const ops::OpArgs& a) {
    return o == op && (a.dtype == "float16" || a.dtype == "float32");
  };
  t.declare = [](const ops::OpArgs& args, const target::Target&) { return args; };
  t.define_space = [name](const ops::Workload& w, const target::Target& target) {
    const autoschedule::TensorCoreFallback fallback = tensor_core_fallback_of(w, target, name);
    const autoschedule::Sketch& sketch = fallback.sketch;
    const std::vector<std::string> knobs = tile_knobs(sketch);
    ConfigSpace s;
    for (size_t i = 0; i < sketch.tiles.size(); ++i)
      s.define_split(knobs[i], sketch.tiles[i].extent, SplitPolicy::Factors, sketch.tiles[i].lengths + 1);
    for (size_t i = 0; i < sketch.unroll.size(); ++i) {
      std::vector<nlohmann::json> values;
      for (int v : autoschedule::auto_unroll_choices()) values.push_back(v);
      s.define_knob(unroll_knob(i), values);
    }
    for (size_t i = 0; i < sketch.vectorize.size(); ++i) s.define_knob(vectorize_knob(i), {0, 1});
    for (size_t i = 0; i < sketch.pipeline.size(); ++i) s.define_knob(pipeline_knob(i), {0, 1}, /*added_later=*/true);
    // Without a record: the numbers a build runs untuned (autoschedule/tensor_core_fallback.h).
    s.set_fallback(knobs_of(sketch, fallback.params, knobs));
    return s;
  };
  t.apply = [name](const ops::Workload& w, const target::Target& target, const ConfigEntity& c) {
    const autoschedule::Sketch sketch = tensor_core_fallback_of(w, target, name).sketch;
    const std::vector<std::string> knobs = tile_knobs(sketch);
    autoschedule::SketchParams p;
    for (size_t i = 0; i < sketch.tiles.size(); ++i) {
      const std::vector<int64_t> split = c.split(knobs[i]);
      p.tiles.emplace_back(split.begin() + 1, split.end());  // the inner lengths; the outer loop runs the rest
    }
    for (size_t i = 0; i < sketch.unroll.size(); ++i) p.unroll.push_back(c.value(unroll_knob(i)).get<int>());
    for (size_t i = 0; i < sketch.vectorize.size(); ++i) p.vectorize.push_back(c.value(vectorize_knob(i)).get<int>());
    for (size_t i = 0; i < sketch.pipeline.size(); ++i) p.pipeline.push_back(c.value(pipeline_knob(i)).get<int>());
    autoschedule::check_params(sketch, p);
    return autoschedule::instantiate(sketch, p);
  };
  return t;
}

}  // namespace

Template dense_tensor_core_template() { return tensor_core_template("dense_tensorcore.cuda", "dense"); }

Template batch_matmul_tensor_core_template() {
  return tensor_core_template("batch_matmul_tensorcore.cuda", "batch_matmul");
}

Template conv2d_nchw_implicit_gemm_tensor_core_template() {
  return tensor_core_template("conv2d_nchw_implicit_gemm_tensorcore.cuda", "conv2d_nchw_implicit_gemm");
}

Template conv2d_nhwc_implicit_gemm_tensor_core_template() {
  return tensor_core_template("conv2d_nhwc_implicit_gemm_tensorcore.cuda", "conv2d_nhwc_implicit_gemm");
}

}  // namespace tessera::autotvm::gpu
