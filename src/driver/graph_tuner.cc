#include "driver/graph_tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <ostream>
#include <set>

#include "autotvm/graph_tuner/dp_solver.h"
#include "autotvm/graph_tuner/pbqp_solver.h"
#include "autotvm/history.h"
#include "compile/build.h"
#include "driver/extract_tasks.h"
#include "compile/fused_kernel.h"
#include "compile/node_expression.h"
#include "ops/transform.h"
#include "records/apply_history_best.h"
#include "schedule/manual_schedule.h"
#include "tessera/error.h"

namespace tessera::driver {

using build::BuildOptions;
using build::FusedKernel;
using build::KernelOperand;
using build::TunableOperator;
using build::fuse_kernel;
using build::kernel_task;
using build::optimize_for_target;
using build::stored_operand_shape;
using build::tunable_operator;

using graph::ConvBlocks;
using graph::NodeId;

namespace {

// One way a convolution can run: its blocks and its kernel's time.
struct ConvState {
  ConvBlocks blocks;
  double seconds = 0;
  records::Record record;  // where the time comes from
};

struct ConvNode {
  std::string name;
  std::vector<ConvState> states;  // states[0]: the blocks of the target's lanes
};

// A producer's output read by a convolution: as its data (compared with the
// reader's input blocks) or as the residual its epilogue adds (compared with
// its output blocks).
struct Dataflow {
  int from = 0, to = 0;
  bool residual = false;
  graph::Shape nchw;  // the value's shape, NCHW
  ir::DType dtype = ir::DType::Float32;
};

// The transform between two channel blocks of one value, as measured (an
// int8 network's values are bytes: a quarter of a float transform's traffic).
struct TransformKey {
  graph::Shape nchw;
  int64_t from = 0, to = 0;
  ir::DType dtype = ir::DType::Float32;
  auto operator<=>(const TransformKey&) const = default;
};

std::string blocked(int64_t b) { return "NCHW" + std::to_string(b) + "c"; }

// The input whose channel blocks a kernel of blocked data runs in, when it
// has no blocks of its own to choose: a pooling's data, an elementwise
// node's operand of its own shape (squeeze-excitation's scale multiplies the
// depthwise output in its blocks). A transform after it is that producer's to
// pay, on this node's value.
std::optional<NodeId> runs_in_blocks_of(const graph::Graph& g, const graph::Node& n) {
  if (n.type.shape.size() != 5) return std::nullopt;
  if (n.op == graph::Op::kMaxPool2d || n.op == graph::Op::kAvgPool2d || n.op == graph::Op::kGlobalAvgPool2d)
    return n.inputs[0];
  if (n.op.definition().pattern != ops::FusionPattern::kElementwise) return std::nullopt;
  for (NodeId in : n.inputs)
    if (g.node(in).type.shape == n.type.shape) return in;
  return std::nullopt;
}

std::vector<int64_t> widths_for(const GraphTunerOptions& options, const target::Target& target) {
  std::vector<int64_t> widths = options.widths;
  const int64_t lanes = target.vector_lanes();
  if (widths.empty()) widths = {lanes / 2, 2 * lanes};
  std::erase_if(widths, [&](int64_t w) { return w < 1 || w == lanes; });
  widths.insert(widths.begin(), lanes);  // first: states[0] is the default
  return widths;
}

class GraphTuner {
 public:
  GraphTuner(const graph::Graph& model, const target::Target& target, const std::vector<records::Record>& log,
             const GraphTunerOptions& options, std::ostream& out)
      : model_(model), target_(target), history_(log), options_(options), out_(out) {}

  GraphTunerResult run() {
    if (!options_.builder || !options_.runner) throw Error("graph tuner: a builder and a runner are required");
    const std::vector<int64_t> widths = widths_for(options_, target_);
    for (int64_t w : widths) add_states(w, w == widths.front());
    measure_states();
    out_ << "INFO Start to benchmark layout transformation...\n";
    const autotvm::graph_tuner::LayoutProblem problem = layout_problem();
    out_ << fmt::format("INFO Benchmarking layout transformation successful ({} transforms measured).\n",
                        result_.transforms_measured);
    std::vector<int> chosen = solve(problem);
    std::vector<int> defaults(problem.node_cost.size(), 0);
    result_.default_seconds = autotvm::graph_tuner::total_cost(problem, defaults);
    result_.chosen_seconds = autotvm::graph_tuner::total_cost(problem, chosen);
    if (result_.chosen_seconds > result_.default_seconds) {  // PBQP's heuristic can lose to the default
      chosen = defaults;
      result_.chosen_seconds = result_.default_seconds;
    }
    collect(chosen);
    add_other_tasks();
    result_.convolutions = static_cast<int>(convs_.size());
    result_.edges = static_cast<int>(problem.edges.size());
    return std::move(result_);
  }

 private:
  // The convolutions' states when the graph is blocked by `width`, and (for
  // the default width) the dataflow between them.
  void add_states(int64_t width, bool is_default) {
    graph::PassOptions passes;
    passes.block = width;
    passes.winograd = options_.winograd;
    passes.int8_weight_limit = build::int8_weight_limit(target_);  // as the build blocks int8 convolutions
    const graph::Graph g = graph::optimize(model_, passes);
    std::map<NodeId, int> conv_of_output;  // a convolution kernel's output node -> conv index
    const graph::Op qlinear_conv2d = graph::Op::named("qlinear_conv2d");
    for (const graph::FusedGroup& group : graph::fuse_operators(g)) {
      const graph::Node& anchor = g.node(group.anchor());
      if (anchor.op != graph::Op::kConv2d && anchor.op != qlinear_conv2d) continue;
      const std::optional<TunableOperator> op = tunable_operator(g, anchor, target_);
      if (!op) continue;
      const FusedKernel kernel =
          fuse_kernel(g, group, [&](const KernelOperand& o) { return stored_operand_shape(g, o); });
      std::optional<autotvm::Task> task = kernel_task(g, group, kernel, target_);
      if (!task) {
        // A depthwise + projection kernel has no task and keeps the target's
        // blocks, but its neighbours' choices still cost layout transforms
        // into and out of it: a node with that one state.
        if (is_default && group.projection >= 0) add_fixed_node(g, group, kernel, conv_of_output);
        continue;
      }
      auto known = index_.find(anchor.name);
      if (known == index_.end()) {
        if (!is_default) continue;  // not a state of the default graph: left alone
        known = index_.emplace(anchor.name, static_cast<int>(convs_.size())).first;
        convs_.push_back({anchor.name, {}});
      }
      const int conv = known->second;
      if (is_default) conv_of_output[group.output()] = conv;
      if (is_default) add_dataflow(g, group, kernel, conv, conv_of_output);
      const ConvBlocks blocks{op->args.ic_bn, op->args.oc_bn};
      auto& states = convs_[conv].states;
      if (std::any_of(states.begin(), states.end(), [&](const ConvState& s) { return s.blocks == blocks; })) continue;
      states.push_back({blocks, 0, {}});
      std::optional<records::Record> best = history_.query(task->workload_key(), target_);
      autotvm::ConfigEntity config = best ? task->space.from_json(best->config) : task->space.fallback();
      if (best) states.back().record = std::move(*best);
      pending_.push_back({conv, states.size() - 1, std::move(*task), std::move(config), best.has_value()});
    }
  }

  // A kernel of the default graph with the blocks it has there and no choice.
  void add_fixed_node(const graph::Graph& g, const graph::FusedGroup& group, const FusedKernel& kernel,
                      std::map<NodeId, int>& conv_of_output) {
    const graph::Node& anchor = g.node(group.anchor());
    const ConvBlocks blocks{g.node(anchor.inputs[0]).type.shape.back(), g.node(group.output()).type.shape.back()};
    const int conv = static_cast<int>(convs_.size());
    convs_.push_back({anchor.name, {ConvState{blocks, 0, {}}}});
    fixed_.insert(conv);
    conv_of_output[group.output()] = conv;
    add_dataflow(g, group, kernel, conv, conv_of_output);
  }

  // The edges into convolution `conv` from the convolutions whose outputs it
  // reads, through layout transforms.
  void add_dataflow(const graph::Graph& g, const graph::FusedGroup& group, const FusedKernel& kernel, int conv,
                    const std::map<NodeId, int>& conv_of_output) {
    const auto skip_transforms = [&](NodeId id) {
      while (g.node(id).op == graph::Op::kLayoutTransform) id = g.node(id).inputs[0];
      return id;
    };
    for (const KernelOperand& operand : kernel.operands) {
      const NodeId value = skip_transforms(operand.source);
      if (g.node(value).type.shape.size() != 5) continue;  // not a channel-blocked activation
      // (A convolution's epilogue ends its group in an elementwise node too:
      // the group's output is looked up first.)
      NodeId source = value;
      while (!conv_of_output.contains(source))
        if (auto in = runs_in_blocks_of(g, g.node(source)))
          source = skip_transforms(*in);
        else
          break;
      auto producer = conv_of_output.find(source);
      if (producer == conv_of_output.end()) continue;    // an input, a constant...
      const graph::Shape& s = g.node(value).type.shape;  // (N, C/b, H, W, b)
      flows_.push_back({producer->second, conv, operand.reader != group.anchor(), {s[0], s[1] * s[4], s[2], s[3]},
                        graph::storage_type(g.node(value).type.dtype)});
    }
  }

  // Every state's kernel (a tuned config or the fallback), each distinct one
  // built once and timed in interleaved rounds, so that a convolution's
  // states are compared under the same conditions.
  void measure_states() {
    std::map<std::string, size_t> measured;  // record key + config -> position in inputs
    std::vector<measure::MeasureInput> inputs;
    std::vector<size_t> input_of(pending_.size());
    for (size_t i = 0; i < pending_.size(); ++i) {
      const Pending& p = pending_[i];
      auto [it, added] = measured.try_emplace(p.task.workload_key() + p.config.to_json().dump(), inputs.size());
      if (added) {
        inputs.push_back(p.task.measure_input(p.config));
        result_.kernels_untuned += !p.tuned;
      }
      input_of[i] = it->second;
    }
    if (inputs.empty()) return;
    out_ << fmt::format(
        "INFO Measuring the {} kernels of every state in {} interleaved rounds ({} without a tuning record: their "
        "fallback configs)...\n",
        inputs.size(), rounds(), result_.kernels_untuned);
    const std::vector<measure::MeasureResult> results = measure_interleaved(inputs);
    result_.kernels_measured = static_cast<int>(inputs.size());
    for (size_t i = 0; i < pending_.size(); ++i) {
      const Pending& p = pending_[i];
      const measure::MeasureResult& r = results.at(input_of[i]);
      ConvState& state = convs_[p.conv].states[p.state];
      if (!r.valid())
        throw Error(fmt::format("graph tuner: {} with channel blocks {}/{} failed to run: {}", p.task.describe(),
                                state.blocks.ic_bn, state.blocks.oc_bn, r.error_message));
      state.seconds = r.min_cost();  // the fastest round: a slow spell of the machine only ever adds time
      if (!p.tuned) state.record = autotvm::make_record(p.task, p.config, r);
    }
  }

  int rounds() const { return std::max(1, options_.rounds); }

  // Each input built once and timed in rounds(), interleaved; one result per
  // input whose costs are its rounds' fastest repeats.
  std::vector<measure::MeasureResult> measure_interleaved(const std::vector<measure::MeasureInput>& inputs) {
    const auto rounds_run = measure::measure_rounds(*options_.builder, *options_.runner, inputs, rounds());
    std::vector<measure::MeasureResult> combined;
    for (size_t i = 0; i < inputs.size(); ++i) combined.push_back(measure::combine_rounds(rounds_run, i));
    return combined;
  }

  autotvm::graph_tuner::LayoutProblem layout_problem() {
    autotvm::graph_tuner::LayoutProblem p;
    for (const ConvNode& c : convs_) {
      p.node_cost.emplace_back();
      for (const ConvState& s : c.states) p.node_cost.back().push_back(s.seconds);
    }
    std::map<std::pair<int, int>, size_t> edge_of;
    std::set<TransformKey> needed;
    for (const Dataflow& f : flows_)
      for (const ConvState& su : convs_[f.from].states)
        for (const ConvState& sv : convs_[f.to].states)
          if (int64_t to = f.residual ? sv.blocks.oc_bn : sv.blocks.ic_bn; su.blocks.oc_bn != to)
            needed.insert({f.nchw, su.blocks.oc_bn, to, f.dtype});
    const std::map<TransformKey, double> transform_seconds = measure_transforms(needed);
    for (const Dataflow& f : flows_) {
      auto [it, added] = edge_of.try_emplace({f.from, f.to}, p.edges.size());
      const auto& from = convs_[f.from].states;
      const auto& to = convs_[f.to].states;
      if (added)
        p.edges.push_back(
            {f.from, f.to, std::vector<std::vector<double>>(from.size(), std::vector<double>(to.size()))});
      auto& cost = p.edges[it->second].cost;
      for (size_t a = 0; a < from.size(); ++a)
        for (size_t b = 0; b < to.size(); ++b) {
          const int64_t wanted = f.residual ? to[b].blocks.oc_bn : to[b].blocks.ic_bn;
          if (from[a].blocks.oc_bn != wanted)
            cost[a][b] += transform_seconds.at({f.nchw, from[a].blocks.oc_bn, wanted, f.dtype});
        }
    }
    return p;
  }

  std::map<TransformKey, double> measure_transforms(const std::set<TransformKey>& keys) {
    std::vector<measure::MeasureInput> inputs;
    for (const TransformKey& k : keys) {
      const graph::Shape& s = k.nchw;
      const ir::Tensor in = ir::placeholder({s[0], s[1] / k.from, s[2], s[3], k.from}, "data", k.dtype);
      ir::ComputeDAG dag({build::stored_as(ops::layout_transform(in, blocked(k.from), blocked(k.to)), k.dtype)});
      schedule::Trace trace = schedule::best_manual_schedule(dag, target_.vector_unit());
      inputs.push_back({std::move(dag), std::move(trace), target_});
    }
    std::map<TransformKey, double> seconds;
    if (inputs.empty()) return seconds;
    const std::vector<measure::MeasureResult> results = measure_interleaved(inputs);
    size_t i = 0;
    for (const TransformKey& k : keys) {
      const measure::MeasureResult& r = results.at(i++);
      if (!r.valid())
        throw Error(fmt::format("graph tuner: the layout transform {} -> {} of a {}x{}x{}x{} value failed to run: {}",
                                blocked(k.from), blocked(k.to), k.nchw[0], k.nchw[1], k.nchw[2], k.nchw[3],
                                r.error_message));
      seconds[k] = r.min_cost();
    }
    result_.transforms_measured = static_cast<int>(keys.size());
    return seconds;
  }

  std::vector<int> solve(const autotvm::graph_tuner::LayoutProblem& problem) {
    if (options_.solver == "dp") {
      out_ << "INFO Start to run dynamic programming algorithm...\n";
      if (auto states = autotvm::graph_tuner::solve_dp(problem)) {
        out_ << "INFO Finished DPExecutor run.\n";
        result_.solver = "dp";
        return *states;
      }
      out_ << "INFO The DP frontier outgrew its limit; using PBQP instead.\n";
    } else if (options_.solver != "pbqp") {
      throw Error("graph tuner: unknown solver '" + options_.solver + "' (dp or pbqp)");
    }
    out_ << "INFO Start to run PBQP algorithm...\n";
    std::vector<int> states = autotvm::graph_tuner::solve_pbqp(problem);
    out_ << "INFO Finished PBQPExecutor run.\n";
    result_.solver = "pbqp";
    return states;
  }

  // The chosen blocks, and one record per chosen kernel naming the
  // convolutions that chose it.
  void collect(const std::vector<int>& chosen) {
    std::map<std::string, size_t> record_of;  // key + config + blocks -> position in result_.records
    for (size_t i = 0; i < convs_.size(); ++i) {
      if (fixed_.count(static_cast<int>(i))) continue;  // nothing chosen, no record to write
      const ConvState& s = convs_[i].states.at(static_cast<size_t>(chosen[i]));
      result_.conv_blocks[convs_[i].name] = s.blocks;
      const std::string id = fmt::format("{}/{}/{}/{}", s.record.workload_key, s.record.config_index.value_or(-1),
                                         s.blocks.ic_bn, s.blocks.oc_bn);
      auto [it, added] = record_of.try_emplace(id, result_.records.size());
      if (added) {
        result_.records.push_back(s.record);
        result_.records.back().workload["nodes"] = nlohmann::json::array();
      }
      result_.records[it->second].workload["nodes"].push_back(convs_[i].name);
    }
  }

  // The best records of the tasks the tuner does not choose for (dense,
  // batch_matmul), so that the file builds the whole network.
  void add_other_tasks() {
    for (const NetworkTask& t : extract_tasks(optimize_for_target(model_, target_, {}, options_.winograd), target_)) {
      if (t.task.op == "conv2d" || t.task.op == "conv2d_winograd" || t.task.op == "depthwise_conv2d" ||
          t.task.op == "group_conv2d" || t.task.op == "qlinear_conv2d")
        continue;
      if (auto best = history_.query(t.task.workload_key(), target_)) result_.records.push_back(*best);
    }
  }

  struct Pending {  // a state's kernel, to be measured
    int conv;
    size_t state;
    autotvm::Task task;
    autotvm::ConfigEntity config;
    bool tuned;  // the config of a record in the log (else the fallback)
  };

  const graph::Graph& model_;
  const target::Target& target_;
  records::ApplyHistoryBest history_;
  const GraphTunerOptions& options_;
  std::ostream& out_;
  std::vector<ConvNode> convs_;
  std::map<std::string, int> index_;
  std::vector<Dataflow> flows_;
  std::vector<Pending> pending_;
  std::set<int> fixed_;  // nodes with one state and no record (depthwise + projection kernels)
  GraphTunerResult result_;
};

}  // namespace

GraphTunerResult tune_graph(const graph::Graph& model, const target::Target& target,
                            const std::vector<records::Record>& log, const GraphTunerOptions& options,
                            std::ostream& out) {
  return GraphTuner(model, target, log, options, out).run();
}

}  // namespace tessera::driver
