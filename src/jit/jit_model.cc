#include "jit/jit_model.h"

#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "target/target.h"
#include "graph/model_source.h"
#include "jit/artifact_cache.h"
#include "jit/fingerprint.h"
#include "driver/compile.h"
#include "driver/tune_network.h"
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
  target::Target t = text.empty() ? target::Target::host() : target::Target::parse(text);
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

GraphFactory model_source(const std::string& model, const std::string& layout) {
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
  resolve_target(options_.target, options_.threads);  // a bad target is an error now, not at the first call
}

JitModel::~JitModel() = default;
JitModel::JitModel(JitModel&&) noexcept = default;

std::ostream& JitModel::log() const { return options_.log ? *options_.log : std::cerr; }

runtime::GraphExecutor& JitModel::run(const std::vector<JitInput>& inputs) {
  const auto start = Clock::now();
  Shapes shapes;
  for (const auto& in : inputs) shapes.push_back(in.shape);
  last_ = CallInfo{};
  auto it = compiled_.find(shapes);
  runtime::GraphExecutor& ex = it != compiled_.end() ? *it->second : compile(shapes);
  const auto ran = Clock::now();
  if (static_cast<int>(inputs.size()) != ex.num_inputs())
    throw Error(fmt::format("{} takes {} inputs, got {}", name_, ex.num_inputs(), inputs.size()));
  // The kernels read the caller's buffers in place (no copy) for this run.
  for (size_t i = 0; i < inputs.size(); ++i) ex.bind_input(static_cast<int>(i), inputs[i].data);
  ex.run();
  ex.unbind_inputs();  // the caller's buffers are theirs again
  last_.compile_seconds = std::chrono::duration<double>(ran - start).count();
  last_.run_seconds = std::chrono::duration<double>(Clock::now() - ran).count();
  return ex;
}

runtime::GraphExecutor& JitModel::compile(const Shapes& shapes) {
  if (static_cast<int>(compiled_.size()) >= options_.recompile_limit) {
    factory_(shapes);  // shapes the model cannot take say so, whatever the limit
    std::vector<std::string> seen;
    for (const auto& [s, ex] : compiled_) seen.push_back(shapes_text(s));
    throw Error(fmt::format(
        "{}: recompile limit of {} reached: input shapes {} would be compilation {} (compiled: {}); "
        "raise recompile_limit, or call with shapes already compiled",
        name_, options_.recompile_limit, shapes_text(shapes), compiled_.size() + 1, fmt::join(seen, "; ")));
  }
  if (!compiled_.empty())
    log() << fmt::format("tessera jit: {}: recompiling for input shapes {} (compilation {} of at most {})\n", name_,
                         shapes_text(shapes), compiled_.size() + 1, options_.recompile_limit);
  const target::Target target = resolve_target(options_.target, options_.threads);
  const graph::Graph model = factory_(shapes);
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
  for (const auto& f : record_files) key.add(fingerprint_file(f));
  last_.cache_key = key.hex();
  last_.compiled = true;

  std::optional<runtime::Artifact> artifact;
  if (options_.disk_cache) artifact = cache.find(last_.cache_key, log());
  if (artifact) {
    last_.from_disk = true;
  } else {
    artifact = driver::compile(model, target, driver::CompileOptions{.records = record_files, .warnings = &log()}).artifact;
    if (options_.disk_cache) cache.store(last_.cache_key, *artifact, log());
  }
  auto ex = std::make_unique<runtime::GraphExecutor>(std::move(*artifact), name_);
  return *compiled_.emplace(shapes, std::move(ex)).first->second;
}

}  // namespace tessera::jit
