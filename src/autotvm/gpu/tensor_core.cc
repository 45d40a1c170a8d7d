// dense_tensorcore.cuda, batch_matmul_tensorcore.cuda and
// conv2d_nchw_implicit_gemm_tensorcore.cuda: a half-storage matrix product
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
//   four-wide loads), where the sketch has them.
// A product the sketch does not tile (fp32 operands, a side that is no
// multiple of 16, another target) is not this template's: define_space
// refuses it and the task takes the plain GPU template (autotvm/task.h).
// Configs whose block holds too many threads or shared bytes are the GPU
// verifier's build errors, as in every GPU template.
#include <initializer_list>

#include "autoschedule/generate_sketches.h"
#include "autoschedule/gpu_sketch_rules.h"
#include "autotvm/gpu/gpu_templates.h"
#include "tessera/error.h"

namespace tessera::autotvm::gpu {

namespace {

autoschedule::Sketch tensor_core_sketch(const ops::Workload& w, const target::Target& target, const std::string& who) {
  for (autoschedule::Sketch& s : autoschedule::generate_sketches(w.dag, autoschedule::SketchContext{target, 1}))
    if (autoschedule::is_tensor_core_sketch(s)) {
      if (!s.parallel.empty() || !s.locations.empty())
        throw Error(who + ": the tensor-core sketch has choices the template does not name");
      return std::move(s);
    }
  throw Error(who + ": no tensor-core tiling of " + w.op + " on " + target.str() +
              " (it needs CUDA sm_80 or later, fp16 operands, and rows, columns and reduction in multiples of 16)");
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

// The largest of `choices` that divides `extent` (1 divides every extent).
int64_t largest_dividing(int64_t extent, std::initializer_list<int64_t> choices) {
  for (int64_t c : choices)
    if (extent % c == 0) return c;
  return 1;
}

// Without a record: 2 x 2 warps (128 threads) where the tiles allow, each
// warp 2 x 2 fragments (a block's tile 64 x 64), the reduction staged 32
// deep a step (16 KB of shared memory for the block's outputs, 8 KB for
// the operands), a step's multiplications unrolled (auto_unroll_max_step
// 64: a step's 8 of them, not the steps; unrolling those too, 512, gave
// NVRTC 70 to 170 KB of source a kernel, and ResNet-18 in half took 90 s
// to compile instead of 3).
nlohmann::json fallback_of(const autoschedule::Sketch& s, const std::vector<std::string>& knobs) {
  nlohmann::json f = nlohmann::json::object();
  for (size_t i = 0; i < s.tiles.size(); ++i) {
    const autoschedule::TileSlot& slot = s.tiles[i];
    if (slot.reduce) {
      const int64_t chunk = largest_dividing(slot.extent, {2});
      f[knobs[i]] = {slot.extent / chunk, chunk};
    } else if (slot.lengths == 2) {
      const int64_t warps = largest_dividing(slot.extent, {2});
      const int64_t fragments = largest_dividing(slot.extent / warps, {2});
      f[knobs[i]] = {slot.extent / warps / fragments, warps, fragments};
    }
  }
  if (!s.unroll.empty()) f[unroll_knob(0)] = 64;
  return f;
}

Template tensor_core_template(const std::string& name, const std::string& op) {
  Template t;
  t.name = name;
  t.target_kind = "cuda";
  t.matches = [op](const std::string& o, const ops::OpArgs& a) { return o == op && a.dtype == "float16"; };
  t.declare = [](const ops::OpArgs& args, const target::Target&) { return args; };
  t.define_space = [name](const ops::Workload& w, const target::Target& target) {
    const autoschedule::Sketch sketch = tensor_core_sketch(w, target, name);
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
    s.set_fallback(fallback_of(sketch, knobs));
    return s;
  };
  t.apply = [name](const ops::Workload& w, const target::Target& target, const ConfigEntity& c) {
    const autoschedule::Sketch sketch = tensor_core_sketch(w, target, name);
    const std::vector<std::string> knobs = tile_knobs(sketch);
    autoschedule::SketchParams p;
    for (size_t i = 0; i < sketch.tiles.size(); ++i) {
      const std::vector<int64_t> split = c.split(knobs[i]);
      p.tiles.emplace_back(split.begin() + 1, split.end());  // the inner lengths; the outer loop runs the rest
    }
    for (size_t i = 0; i < sketch.unroll.size(); ++i) p.unroll.push_back(c.value(unroll_knob(i)).get<int>());
    for (size_t i = 0; i < sketch.vectorize.size(); ++i) p.vectorize.push_back(c.value(vectorize_knob(i)).get<int>());
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

bool is_tensor_core_template(const std::string& template_name) {
  return template_name == "dense_tensorcore.cuda" || template_name == "batch_matmul_tensorcore.cuda" ||
         template_name == "conv2d_nchw_implicit_gemm_tensorcore.cuda";
}

TensorCoreFallbackShape tensor_core_fallback_shape(const Task& task) {
  const ConfigEntity fallback = task.space.fallback();
  TensorCoreFallbackShape shape{1, 16};  // tile_k counts the reduction in 16-deep tiles
  for (const Knob& knob : task.space.knobs()) {
    if (knob.kind != KnobKind::Split) continue;
    const std::vector<int64_t> split = fallback.split(knob.name);
    if (knob.name == "tile_k") {
      for (int64_t part : split) shape.reduce *= part;
    } else {
      shape.blocks *= split.front();
    }
  }
  // A batched product's blocks run along its batch too (its block loop fuses it).
  const std::vector<int64_t>& out = task.workload.dag.outputs()[0]->shape;
  if (task.op == "batch_matmul")
    for (size_t d = 0; d + 2 < out.size(); ++d) shape.blocks *= out[d];
  return shape;
}

bool tensor_core_fallback_pays(const Task& task) {
  const TensorCoreFallbackShape shape = tensor_core_fallback_shape(task);
  return shape.blocks >= schedule::kSplitReductionBlocks || shape.reduce <= kShortTensorCoreReduce ||
         (shape.blocks >= kTensorCoreWaveBlocks && shape.reduce <= kMediumTensorCoreReduce);
}

}  // namespace tessera::autotvm::gpu
