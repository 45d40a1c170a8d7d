#include "jit/jit_model.h"

#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "driver/parse_target.h"
#include "target/target.h"
#include "graph/model_source.h"
#include "jit/artifact_cache.h"
#include "graph/calibration.h"
#include "jit/fingerprint.h"
#include "driver/compile.h"
#include "driver/tune_network.h"
#include "records/shipped.h"
#include "tessera/error.h"

namespace tessera::jit {

namespace {

using Clock = std::chrono::steady_clock;
using Shapes = std::vector<std::vector<int64_t>>;

// Bump when a change makes older cached artifacts wrong to reuse.
constexpr const char* kCacheVersion = "tessera-jit-1";

std::string shapes_text(const Shapes& shapes) {
  std::vector<std::string> parts;
  for (const auto& s : shapes) parts.push_back(fmt::format("[{}]", fmt::join(s, ",")));
  return fmt::format("{}", fmt::join(parts, " "));
}

}  // namespace

target::Target resolve_target(const std::string& text, int threads) {
  if (threads < 0) throw Error("threads must be 0 (the target's) or more, got " + std::to_string(threads));
  target::Target t = driver::parse_target(text);
  if (threads > 0) t.threads = threads;
  return t;
}

JitMode jit_mode_from_string(const std::string& text) {
  if (text == "default") return JitMode::kDefault;
  if (text == "reduce-overhead") return JitMode::kReduceOverhead;
  if (text == "max-autotune") return JitMode::kMaxAutotune;
  throw Error("mode '" + text + "': one of default, reduce-overhead, max-autotune");
}

std::string to_string(JitMode mode) {
  switch (mode) {
    case JitMode::kDefault: return "default";
    case JitMode::kReduceOverhead: return "reduce-overhead";
    case JitMode::kMaxAutotune: return "max-autotune";
  }
  return "?";
}

GraphFactory model_source(const std::string& model, const std::string& layout,
                          std::vector<std::string> onnx_input_names) {
  if (!onnx_input_names.empty() && graph::is_onnx_model(model))
    return [model, names = std::move(onnx_input_names)](const Shapes& shapes) {
      if (shapes.size() != names.size())
        throw Error(fmt::format("{} takes {} inputs ({}), got {}", model, names.size(), fmt::join(names, ", "),
                                shapes.size()));
      graph::ModelOptions options;
      for (size_t i = 0; i < names.size(); ++i) options.input_shapes[names[i]] = shapes[i];
      return graph::load_model(model, options);
    };
  return [model, layout](const Shapes& shapes) {
    if (shapes.empty() || shapes[0].empty()) throw Error(model + ": needs an input with a batch dimension");
    if (shapes[0][0] < 1)
      throw Error(fmt::format("{}: the input has a batch of {} (shape {}); a batch holds at least one item", model,
                              shapes[0][0], shapes_text({shapes[0]})));
    graph::Graph g = graph::load_model(model, {shapes[0][0], layout});
    const auto inputs = g.input_ids();
    Shapes expected;
    for (auto id : inputs) expected.push_back(g.node(id).type.shape);
    if (expected != shapes)
      throw Error(fmt::format("{} takes input{} of shape {} (any batch), got {}", model, inputs.size() == 1 ? "" : "s",
                              shapes_text(expected), shapes_text(shapes)));
    return g;
  };
}

GraphFactory fixed_graph(graph::Graph graph) {
  auto g = std::make_shared<const graph::Graph>(std::move(graph));
  return [g](const Shapes& shapes) {
    Shapes expected;
    for (auto id : g->input_ids()) expected.push_back(g->node(id).type.shape);
    if (expected != shapes)
      throw Error(fmt::format("the graph was built for input shapes {}, got {}", shapes_text(expected), shapes_text(shapes)));
    return *g;
  };
}

JitModel::JitModel(std::string name, GraphFactory factory, JitOptions options)
    : name_(std::move(name)), factory_(std::move(factory)), options_(std::move(options)) {
  if (options_.recompile_limit < 1) throw Error("jit: recompile_limit must be at least 1");
  if (!options_.quantize.empty() && options_.dynamic)
    throw Error("jit: quantize=" + options_.quantize + " compiles fixed shapes; it does not take dynamic=True");
  if (!options_.quantize.empty()) graph::calibration_method(options_.calibration);  // a bad name is an error now
  resolve_target(options_.target, options_.threads);  // a bad target is an error now, not at the first call
}

JitModel::~JitModel() = default;
JitModel::JitModel(JitModel&&) noexcept = default;

std::ostream& JitModel::log() const { return options_.log ? *options_.log : std::cerr; }

const std::vector<JitOutput>& JitModel::run(const std::vector<JitInput>& inputs) {
  const auto start = Clock::now();
  Shapes shapes;
  for (const auto& in : inputs) shapes.push_back(in.shape);
  last_ = CallInfo{};
  outputs_.clear();
  // A shape compiled as it is runs as it is; another size of a dimension
  // already seen runs in its range (dynamic).
  Range* range = options_.dynamic && !compiled_.count(shapes) ? range_for(shapes) : nullptr;
  if (range) {
    runtime::VaryingExecutor& ex = *range->executor;
    const auto ran = Clock::now();
    if (static_cast<int>(inputs.size()) != ex.num_inputs())
      throw Error(fmt::format("{} takes {} inputs, got {}", name_, ex.num_inputs(), inputs.size()));
    // Inputs are padded into the bucket's buffers: one copy each.
    for (size_t i = 0; i < inputs.size(); ++i) {
      runtime::NDArray value(inputs[i].shape);
      std::copy(inputs[i].data, inputs[i].data + value.size(), value.data());
      ex.set_input(static_cast<int>(i), value);
    }
    ex.run();
    range_outputs_.clear();
    for (int i = 0; i < ex.num_outputs(); ++i) {
      range_outputs_.push_back(ex.get_output(i));
      outputs_.push_back({range_outputs_.back().data(), range_outputs_.back().shape()});
    }
    last_.compile_seconds = std::chrono::duration<double>(ran - start).count();
    last_.run_seconds = std::chrono::duration<double>(Clock::now() - ran).count();
    return outputs_;
  }
  auto it = compiled_.find(shapes);
  runtime::GraphExecutor& ex = it != compiled_.end() ? *it->second : compile(shapes);
  const auto ran = Clock::now();
  if (static_cast<int>(inputs.size()) != ex.num_inputs())
    throw Error(fmt::format("{} takes {} inputs, got {}", name_, ex.num_inputs(), inputs.size()));
  // The kernels read the caller's buffers in place (no copy) for this run.
  for (size_t i = 0; i < inputs.size(); ++i) ex.bind_input(static_cast<int>(i), inputs[i].data);
  ex.run();
  ex.unbind_inputs();  // the caller's buffers are theirs again
  for (int i = 0; i < ex.num_outputs(); ++i) outputs_.push_back({ex.output_data(i), ex.output_shape(i)});
  last_.compile_seconds = std::chrono::duration<double>(ran - start).count();
  last_.run_seconds = std::chrono::duration<double>(Clock::now() - ran).count();
  return outputs_;
}

namespace {

// Where `b` differs from `a` when it is `a` at another size of one
// dimension: every differing extent is one value in `a` and one in `b`.
// Returns the (input, axis) places and the two sizes; nothing otherwise.
struct OneDimension {
  std::vector<std::pair<size_t, size_t>> places;
  int64_t size_a = 0, size_b = 0;
};
std::optional<OneDimension> one_dimension_between(const std::vector<std::vector<int64_t>>& a,
                                                  const std::vector<std::vector<int64_t>>& b) {
  if (a.size() != b.size()) return std::nullopt;
  OneDimension d;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return std::nullopt;
    for (size_t axis = 0; axis < a[i].size(); ++axis) {
      if (a[i][axis] == b[i][axis]) continue;
      if (d.places.empty()) d.size_a = a[i][axis], d.size_b = b[i][axis];
      if (a[i][axis] != d.size_a || b[i][axis] != d.size_b || b[i][axis] < 1) return std::nullopt;
      d.places.emplace_back(i, axis);
    }
  }
  if (d.places.empty()) return std::nullopt;
  return d;
}

}  // namespace

JitModel::Range* JitModel::range_for(const Shapes& shapes) {
  for (Range& r : ranges_) {
    const auto d = one_dimension_between(r.shapes, shapes);
    if (d && d->places == r.places && d->size_b <= r.max) return &r;
    if (r.shapes == shapes) return &r;
  }
  // A known shape at another size of one dimension: that dimension's range,
  // up to the larger size rounded up to a power of two (or a wider one).
  std::vector<const Shapes*> known;
  for (const auto& [s, ex] : compiled_) known.push_back(&s);
  for (const Range& r : ranges_) known.push_back(&r.shapes);
  for (const Shapes* k : known) {
    const auto d = one_dimension_between(*k, shapes);
    if (!d) continue;
    int64_t max = 1;
    while (max < std::max(d->size_a, d->size_b)) max *= 2;
    check_recompile_limit(shapes);
    Shapes at_max = shapes;
    for (auto [i, axis] : d->places) at_max[i][axis] = max;
    auto load = [&](int64_t size) {
      Shapes s = at_max;
      for (auto [i, axis] : d->places) s[i][axis] = size;
      return factory_(s);
    };
    graph::VaryingDimension dim{fmt::format("input {} axis {}", d->places[0].first, d->places[0].second), 1, max,
                                graph::default_buckets(1, max)};
    log() << fmt::format("tessera jit: {}: {} varies ({} and {}): one artifact for sizes 1..{} (buckets {})\n", name_,
                         dim.name, d->size_a, d->size_b, max, fmt::join(dim.buckets, " "));
    const target::Target target = resolve_target(options_.target, options_.threads);
    try {
      // The largest size keys the cache; on a miss the build reuses it rather than loading it again.
      const graph::Graph largest = load(max);
      auto load_once = [&](int64_t size) { return size == max ? largest : load(size); };
      runtime::Artifact artifact =
          build_cached(largest, fmt::format("range 1..{} {}", max, dim.name), [&](const driver::CompileOptions& o) {
            return driver::compile_varying(load_once, dim, target, o).artifact;
          });
      ranges_.push_back(
          Range{at_max, d->places, max, std::make_unique<runtime::VaryingExecutor>(std::move(artifact), name_)});
      return &ranges_.back();
    } catch (const Error& e) {
      // A dimension padding would change (an image's height), or sizes the
      // model cannot take: these shapes compile as they are.
      log() << fmt::format("tessera jit: {}: {} cannot vary ({}); compiling input shapes {} as they are\n", name_,
                           dim.name, e.what(), shapes_text(shapes));
      return nullptr;
    }
  }
  return nullptr;
}

void JitModel::check_recompile_limit(const Shapes& shapes) const {
  if (compilations() < options_.recompile_limit) return;
  factory_(shapes);  // shapes the model cannot take say so, whatever the limit
  std::vector<std::string> seen;
  for (const auto& [s, ex] : compiled_) seen.push_back(shapes_text(s));
  for (const Range& r : ranges_) seen.push_back(shapes_text(r.shapes) + fmt::format(" (sizes 1..{})", r.max));
  throw Error(fmt::format(
      "{}: recompile limit of {} reached: input shapes {} would be compilation {} (compiled: {}); "
      "raise recompile_limit, or call with shapes already compiled",
      name_, options_.recompile_limit, shapes_text(shapes), compilations() + 1, fmt::join(seen, "; ")));
}

runtime::GraphExecutor& JitModel::compile(const Shapes& shapes) {
  check_recompile_limit(shapes);
  if (compilations() > 0)
    log() << fmt::format("tessera jit: {}: recompiling for input shapes {} (compilation {} of at most {})\n", name_,
                         shapes_text(shapes), compilations() + 1, options_.recompile_limit);
  const target::Target target = resolve_target(options_.target, options_.threads);
  const graph::Graph model = factory_(shapes);
  runtime::Artifact artifact = build_cached(model, "", [&](const driver::CompileOptions& o) {
    return driver::compile(model, target, o).artifact;
  });
  auto ex = std::make_unique<runtime::GraphExecutor>(std::move(artifact), name_);
  return *compiled_.emplace(shapes, std::move(ex)).first->second;
}

runtime::Artifact JitModel::build_cached(const graph::Graph& model, const std::string& extra_key,
                                         const std::function<runtime::Artifact(const driver::CompileOptions&)>& build) {
  const target::Target target = resolve_target(options_.target, options_.threads);
  const std::string graph_key = fingerprint_graph(model);
  const ArtifactCache cache(options_.cache_dir.empty() ? default_cache_dir() : options_.cache_dir);

  std::vector<std::string> record_files;
  if (!options_.records.empty()) record_files.push_back(options_.records);
  if (options_.mode == JitMode::kMaxAutotune) {
    // One log per target, shared by every model: records are filed by
    // workload, so a kernel tuned for one network serves the next.
    const std::string tune_log = options_.autotune_log.empty()
                                     ? cache.dir() + "/autotune-" + Fingerprint().add(target.str()).hex() + ".log"
                                     : options_.autotune_log;
    std::filesystem::create_directories(std::filesystem::path(tune_log).parent_path());
    log() << fmt::format("tessera jit: {}: max-autotune, tuning the kernels without a record ({:g} min at most)\n",
                         name_, options_.autotune_minutes);
    // Only what neither the given records nor earlier runs hold a record of.
    driver::tune_network(model, target,
                         driver::TuneOptions{.log = tune_log,
                                             .time_budget_min = options_.autotune_minutes,
                                             .only_missing = true,
                                             .known = record_files,
                                             .evaluate = false},
                         std::cout, log());
    record_files.push_back(tune_log);
  }

  Fingerprint key;
  key.add(kCacheVersion).add(graph_key).add(target.str());
  if (!extra_key.empty()) key.add(extra_key);
  if (!options_.quantize.empty())  // an int8 artifact is another artifact; a .npy's contents are part of it
    key.add("quantize=" + options_.quantize + " calibration=" + options_.calibration + " calibrate=" +
            (std::filesystem::exists(options_.calibrate) ? fingerprint_file(options_.calibrate) : options_.calibrate));
  for (const auto& f : record_files) key.add(fingerprint_file(f));
  // Without records of its own the build takes those shipped for the target:
  // other shipped records make another artifact.
  if (record_files.empty())
    for (const auto& f : records::shipped_records_for(records::shipped_records_dir(), target, log()).logs)
      key.add(fingerprint_file(f));
  last_.cache_key = key.hex();
  last_.compiled = true;

  std::optional<runtime::Artifact> artifact;
  if (options_.disk_cache) artifact = cache.find(last_.cache_key, log());
  if (artifact) {
    last_.from_disk = true;
    return std::move(*artifact);
  }
  driver::CompileOptions compile_options{.records = record_files, .warnings = &log()};
  compile_options.quantize = options_.quantize;
  compile_options.calibrate = options_.calibrate;
  if (!options_.quantize.empty())
    compile_options.quantization.calibration.method = graph::calibration_method(options_.calibration);
  runtime::Artifact built = build(compile_options);
  if (options_.disk_cache) cache.store(last_.cache_key, built, log());
  return built;
}

}  // namespace tessera::jit
