#include "driver/compile.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "compile/graph_choices.h"
#include "driver/calibration_samples.h"
#include "graph/graph_pack.h"
#include "records/apply_history_best.h"
#include "records/log_file.h"
#include "tessera/error.h"
#include "vta/target_config.h"

namespace tessera::driver {

bool half_storage_of(const std::string& dtype) {
  if (dtype != "float32" && dtype != "float16")
    throw Error("--dtype " + dtype + ": float32, or float16 (half storage on a GPU target)");
  return dtype == "float16";
}

void apply_convolutions(const std::string& convolutions, const target::Target& target, build::BuildOptions& b) {
  if (convolutions == "auto") return;
  if (convolutions == "direct") {
    b.implicit_gemm = false;
    b.winograd = b.gpu_winograd = false;
    return;
  }
  if (convolutions == "winograd") {
    if (!target.is_gpu()) {
      b.winograd = true;
      return;
    }
    b.implicit_gemm = false;
    b.gpu_winograd = true;
    return;
  }
  if (convolutions != "implicit-gemm")
    throw Error("--convolutions " + convolutions + ": auto, direct, implicit-gemm or winograd");
  if (!target.is_gpu())
    throw Error("--convolutions implicit-gemm: convolutions as matrix products are for GPU targets; " + target.kind +
                " convolves directly or by Winograd");
  b.implicit_gemm = true;
}

namespace {

// The records CompileOptions names, read once, and the build options they give.
struct BuildSetup {
  std::optional<records::ApplyHistoryBest> history;
  build::BuildOptions options;
};

// The shipped pre-tuned records for `target`, said once; none when the
// caller gave records of its own or asked for none.
std::vector<records::Record> shipped_for(const CompileOptions& options, const target::Target& target) {
  if (!options.shipped_records || !options.records.empty() || !options.loaded_records.empty()) return {};
  std::ostream& warnings = options.warnings ? *options.warnings : std::cerr;
  records::ShippedRecords shipped = records::shipped_records_for(options.shipped_dir, target, warnings);
  if (shipped.records.empty()) return {};
  warnings << "note: " << shipped.records.size() << " pre-tuned records shipped for '" << target.match_key() << "' ("
           << shipped.sources() << ") schedule the kernels they cover; --no-shipped-records compiles without them\n";
  return std::move(shipped.records);
}

void set_up(const CompileOptions& options, const target::Target& target, BuildSetup& setup) {
  build::BuildOptions& b = setup.options;
  b.half_storage = half_storage_of(options.dtype);
  b.winograd = options.winograd;
  apply_convolutions(options.convolutions, target, b);
  b.keep_layout = options.keep_layout;
  b.untuned_tensor_cores = options.untuned_tensor_cores;
  b.untuned_pipeline = options.untuned_pipeline;
  b.fuse.depthwise_projection_min_rows = options.fuse_depthwise_rows;
  b.warnings = options.warnings;
  std::vector<records::Record> shipped = shipped_for(options, target);
  if (!shipped.empty()) {
    b.warn_untuned = false;  // they cover the zoo's networks, not every kernel
    b.conv_blocks = build::graph_choices(shipped);
    setup.history.emplace(std::move(shipped));
    b.history = &*setup.history;
    return;
  }
  if (options.records.empty() && options.loaded_records.empty()) return;
  std::vector<records::Record> all = options.loaded_records;
  for (const auto& log : options.records) {
    auto r = records::load_records(log, options.warnings ? *options.warnings : std::cerr);
    all.insert(all.end(), r.begin(), r.end());
  }
  b.conv_blocks = build::graph_choices(all);
  setup.history.emplace(std::move(all));
  b.history = &*setup.history;
}

// Index of a param of `params` equal to `value` (shape and bytes), or -1.
class ParamIndex {
 public:
  explicit ParamIndex(const std::vector<runtime::NDArray>& params) : params_(params) {
    for (size_t i = 0; i < params.size(); ++i) by_hash_.emplace(hash(params[i]), static_cast<int>(i));
  }
  int find(const runtime::NDArray& value) const {
    auto [first, last] = by_hash_.equal_range(hash(value));
    for (auto it = first; it != last; ++it) {
      const runtime::NDArray& p = params_[static_cast<size_t>(it->second)];
      if (p.shape() == value.shape() && std::memcmp(p.data(), value.data(), p.size() * sizeof(float)) == 0)
        return it->second;
    }
    return -1;
  }

 private:
  static uint64_t hash(const runtime::NDArray& a) {  // FNV-1a over the shape and a sample of the values
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    for (int64_t d : a.shape()) mix(static_cast<uint64_t>(d));
    const int64_t step = std::max<int64_t>(1, a.size() / 64);
    for (int64_t i = 0; i < a.size(); i += step) {
      uint32_t bits;
      std::memcpy(&bits, a.data() + i, sizeof(bits));
      mix(bits);
    }
    return h;
  }
  const std::vector<runtime::NDArray>& params_;
  std::multimap<uint64_t, int> by_hash_;
};

}  // namespace

graph::Graph quantize_model(const graph::Graph& model, const target::Target& target, const std::string& quantize,
                            const std::string& calibrate, const graph::QuantizeOptions& options,
                            std::ostream& warnings) {
  if (quantize != "int8") throw Error("--quantize " + quantize + ": int8");
  if (target.is_gpu()) throw Error("--quantize int8: quantized networks run on CPU targets, not " + target.kind);
  // The float graph optimized in NCHW (no Winograd), then quantize_network on it.
  const graph::Graph optimized = build::optimize_for_target(model, target, {}, false, true);
  const bool calibrated = options.global_scale <= 0;
  graph::QuantizeOptions quantization = options;
  quantization.weight_max = std::min(quantization.weight_max, build::int8_weight_limit(target) == 127 ? 127 : 63);
  graph::QuantizeReport report;
  const graph::Graph quantized = graph::quantize_network(
      optimized, calibrated ? calibration_samples(model, calibrate) : std::vector<std::vector<runtime::NDArray>>{},
      quantization, &report);
  // Asked for int8, a user hears how much of the network got it.
  const std::string unquantizable =
      report.not_quantizable ? fmt::format(", {} in a form int8 kernels do not take (NCHW / OIHW convolutions, "
                                           "ungrouped or depthwise, constant weights: not --layout NHWC)",
                                           report.not_quantizable)
                             : "";
  if (report.quantized == 0)
    throw Error(fmt::format("--quantize int8: no convolution of this model is quantized ({} kept float32 by "
                            "--skip-layers{})",
                            report.convolutions, unquantizable));
  warnings << fmt::format("note: --quantize int8: {} of {} convolutions in int8 ({} kept float32 by --skip-layers{})\n",
                          report.quantized, report.convolutions + report.not_quantizable,
                          report.convolutions - report.quantized, unquantizable);
  return quantized;
}

namespace {

// --quantize int8: the quantized model through the passes again: the int8
// convolutions and what lies between them go into the int8 kernels' blocks.
graph::Graph quantized_graph(const graph::Graph& model, const target::Target& target, const CompileOptions& options,
                             const build::BuildOptions& build_options) {
  const graph::Graph quantized = quantize_model(model, target, options.quantize, options.calibrate,
                                                options.quantization,
                                                options.warnings ? *options.warnings : std::cerr);
  return build::optimize_for_target(quantized, target, build_options.conv_blocks, false, build_options.keep_layout);
}

}  // namespace

graph::Graph vta_graph(const graph::Graph& model, const target::Target& target, const CompileOptions& options,
                       const build::BuildOptions& build_options) {
  if (!options.quantize.empty() && options.quantize != "int8")
    throw Error("--quantize " + options.quantize + ": VTA computes in int8");
  std::ostream& warnings = options.warnings ? *options.warnings : std::cerr;
  graph::QuantizeOptions q = options.quantization;
  q.power_of_two = true;
  if (q.global_scale <= 0) q.global_scale = 8.0;  // the seed's
  const graph::Graph quantized = quantize_model(model, target, "int8", options.calibrate, q, warnings);
  const vta::VtaConfig config = vta::config_of(target);
  graph::GraphPackReport report;
  const graph::Graph packed = graph::graph_pack(
      quantized, {.block_batch = config.batch(), .block_in = config.block_in(), .block_out = config.block_out()},
      &report);
  warnings << fmt::format("note: --target vta: {} convolutions run on VTA ({} residual adds fused into them){}\n",
                          report.convolutions, report.residual_adds,
                          report.not_packed.empty() ? "" : fmt::format(", {} stay on the CPU:", report.not_packed.size()));
  for (const std::string& why : report.not_packed) warnings << "  " << why << "\n";
  return build::optimize_for_target(packed, target, build_options.conv_blocks, false, build_options.keep_layout);
}

build::BuildResult compile(const graph::Graph& model, const target::Target& target, const CompileOptions& options) {
  BuildSetup setup;
  set_up(options, target, setup);
  if (target.accelerator == "vta")
    return build::build_optimized(model, vta_graph(model, target, options, setup.options), target, setup.options);
  if (!options.quantize.empty())
    return build::build_optimized(model, quantized_graph(model, target, options, setup.options), target, setup.options);
  return build::build(model, target, setup.options);
}

VaryingBuildResult compile_varying(const std::function<graph::Graph(int64_t size)>& load,
                                   const graph::VaryingDimension& dimension, const target::Target& target,
                                   const CompileOptions& options) {
  const std::vector<int64_t>& sizes = dimension.buckets;
  if (sizes.empty() || dimension.min >= dimension.max)
    throw Error("the varying dimension " + dimension.name + " needs a range of more than one size");
  BuildSetup setup;
  set_up(options, target, setup);
  const build::BuildOptions& b = setup.options;
  auto optimized_at = [&](const graph::Graph& model) {
    return build::optimize_for_target(model, target, b.conv_blocks, b.winograd, b.keep_layout,
                                      build::implicit_gemm_of(b, target), b.gpu_winograd);
  };
  std::vector<graph::Graph> models, optimized;
  for (int64_t size : sizes) {
    models.push_back(load(size));
    optimized.push_back(optimized_at(models.back()));
  }
  VaryingBuildResult result;
  runtime::VaryingShapes varying{dimension.name, dimension.min, dimension.max, sizes, {}, {}, false};
  for (size_t i = 0; i < sizes.size(); ++i) {
    graph::Graph graph = optimized[i];
    // The smallest size is never padded; every other bucket is proven exact
    // under padding against the model at another size: the nearest other
    // bucket above 1 (a size-1 axis can change what the passes make), else
    // one loaded for the comparison.
    if (sizes[i] > dimension.min) {
      std::optional<size_t> other;
      for (size_t j : {i + 1, i - 1})
        if (j < sizes.size() && sizes[j] > 1 && !other) other = j;
      std::optional<graph::Graph> probe;
      const int64_t probe_size = sizes[i] - 1 > 1 ? sizes[i] - 1 : sizes[i] + 1;
      if (!other) probe = optimized_at(load(probe_size));
      graph::PaddedGraph padded =
          graph::pad_varying_dimension(graph, sizes[i], probe ? *probe : optimized[*other],
                                       probe ? probe_size : sizes[*other], dimension.min);
      if (!padded.inexact.empty()) {
        if (!dimension.listed)
          throw Error(padded.inexact + ": padding " + dimension.name + " to a bucket would change its result; list " +
                      "the sizes to compile with --buckets (each then runs at exactly its size), or give one size");
        varying.exact_only = padded.inexact;
      }
      if (i + 1 == sizes.size()) {
        varying.inputs = padded.inputs;
        varying.outputs = padded.outputs;
        varying.masked = padded.masked;
      }
      graph = std::move(padded.graph);
    }
    result.buckets.push_back(build::build_optimized(models[i], std::move(graph), target, b));
  }
  for (size_t i = 0; i + 1 < sizes.size(); ++i)
    if (result.buckets[i].artifact.graph.outputs.size() != varying.outputs.size())
      throw Error("the model has another number of outputs at " + dimension.name + " = " + std::to_string(sizes[i]));

  runtime::Artifact& a = result.artifact;
  a = std::move(result.buckets.back().artifact);
  a.varying = varying;
  const ParamIndex index(a.params);
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    runtime::Artifact& from = result.buckets[i].artifact;
    runtime::ArtifactBucket bucket{sizes[i], std::move(from.graph), std::move(from.shared_object), {}, {},
                                   std::move(from.gpu)};
    for (runtime::NDArray& p : from.params) {
      bucket.shared.push_back(index.find(p));
      if (bucket.shared.back() < 0) bucket.own.push_back(std::move(p));
    }
    a.smaller.push_back(std::move(bucket));
  }
  return result;
}

}  // namespace tessera::driver
