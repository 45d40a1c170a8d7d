#include "driver/tune_vta.h"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "autotvm/tune_tasks.h"
#include "autotvm/vta/conv2d_packed.h"
#include "driver/compile.h"
#include "measure/vta_measure.h"
#include "ops/conv2d_packed.h"
#include "records/log_file.h"
#include "runtime/graph_executor.h"
#include "tessera/error.h"
#include "vta/target_config.h"

namespace tessera::driver {

namespace {

// The tuner that searches knobs where `name` would read a kernel's loops.
std::string knob_tuner(const std::string& name) {
  if (name.find("itervar") != std::string::npos || name.find("curve") != std::string::npos)
    throw Error("--tuner " + name + ": VTA's programs have no loop nest to take features from; use a knob tuner (" +
                "xgb_knob, xgb_rank_knob, ga, random, gridsearch)");
  if (name.rfind("xgb", 0) == 0 && name.find("knob") == std::string::npos) return name + "_knob";
  return name;
}

// One run of the network compiled with `records` (none: the template's
// fallbacks): the accelerator's cycles over its calls.
struct SimulatedRun {
  int64_t cycles = 0, gemm_cycles = 0;
  int tuned = 0, kernels = 0;
};

SimulatedRun simulate_network(const graph::Graph& model, const target::Target& target, const TuneOptions& o,
                              const std::vector<records::Record>& records, std::ostream& warnings) {
  CompileOptions c;
  c.loaded_records = records;
  c.shipped_records = false;
  c.warnings = &warnings;
  c.calibrate = o.calibrate;
  c.quantization = o.quantization;
  build::BuildResult built = compile(model, target, c);
  SimulatedRun r;
  for (const build::KernelSummary& k : built.kernels)
    if (k.accelerator) ++r.kernels, r.tuned += k.tuned;
  runtime::GraphExecutor ex(std::move(built.artifact), "network");
  ex.set_random_inputs();
  ex.run();
  for (size_t i = 0; i < ex.graph().calls.size(); ++i)
    if (ex.is_accelerator_call(i))
      r.cycles += ex.accelerator_stats()[i].cycles, r.gemm_cycles += ex.accelerator_stats()[i].gemm_cycles;
  return r;
}

}  // namespace

TuneResult tune_vta(const graph::Graph& model, const target::Target& target, const TuneOptions& o, std::ostream& out,
                    std::ostream& warnings) {
  if (o.search != "templates") throw Error("--search auto: VTA's kernels are tuned by the conv2d_packed.vta template");
  if (!o.graph_tuner.empty()) throw Error("--graph-tuner: VTA's layouts are fixed by its GEMM core (NCHW1n16c)");
  if (o.dtype != "float32") throw Error("--dtype " + o.dtype + ": VTA computes in int8");
  out << "Extract tasks...\n";
  CompileOptions c;
  c.warnings = &warnings;
  c.calibrate = o.calibrate;
  c.quantization = o.quantization;
  const graph::Graph packed = vta_graph(model, target, c, {});
  std::map<std::string, std::pair<ops::Conv2dPackedAttrs, int>> by_key;  // in the order first called
  std::vector<std::string> order;
  for (const graph::Node& n : packed.nodes()) {
    if (graph::op_name(n.op) != "conv2d_packed") continue;
    const ops::Conv2dPackedAttrs a = autotvm::vta::tuning_attrs(n.attrs_as<ops::Conv2dPackedAttrs>());
    auto [it, fresh] = by_key.try_emplace(a.to_string(), a, 0);
    ++it->second.second;
    if (fresh) order.push_back(a.to_string());
  }
  std::vector<autotvm::Task> tasks;
  std::vector<autotvm::WeightedTask> weighted;
  for (const std::string& key : order) tasks.push_back(autotvm::vta::conv2d_packed_task(by_key.at(key).first, target));
  for (size_t i = 0; i < tasks.size(); ++i) {
    weighted.push_back({&tasks[i], by_key.at(order[i]).second});
    out << fmt::format("Task {:2}: {} x{} ({} configs)\n", i + 1, tasks[i].describe(), weighted.back().weight,
                       tasks[i].space.size());
  }
  out << fmt::format("{} tasks for {} ({}); log {}\n", tasks.size(), target.str(), target.match_key(), o.log);

  std::optional<measure::VtaBuilder> local_builder;
  std::optional<measure::VtaRunner> local_runner;
  measure::Builder* builder = o.builder;
  measure::Runner* runner = o.runner;
  if (!builder) builder = &local_builder.emplace();
  if (!runner) runner = &local_runner.emplace();
  out << "Tuning...\n" << std::flush;
  autotvm::TuneTasksOptions tune;
  tune.tuner = knob_tuner(o.tuner);
  tune.n_trial = o.trials;
  tune.early_stopping = o.early_stopping;
  tune.time_budget_min = o.time_budget_min;
  tune.log = o.log;
  tune.transfer_learning = false;  // other tasks' records carry no loops to learn from
  tune.confirm_leaders = o.confirm_leaders;
  tune.confirm_rounds = o.confirm_rounds;
  tune.seed = o.seed;
  tune.stop = o.stop;
  const autotvm::TuneTasksSummary summary = autotvm::tune_tasks(
      weighted, tune, autotvm::MeasureOption{builder, runner, o.confirm_runner ? o.confirm_runner : runner}, out,
      warnings);
  TuneResult result{static_cast<int>(tasks.size()),
                    summary.tuned,
                    summary.already_done,
                    summary.trials,
                    summary.seconds,
                    summary.stopped};
  out << fmt::format("tuned {} tasks ({} already tuned) with {} trials in {:.0f} s\n", summary.tuned,
                     summary.already_done, summary.trials, summary.seconds);
  if (result.stopped || !o.evaluate) return result;

  std::ostream already_reported(nullptr);
  const std::vector<records::Record> records = records::load_records(o.log, already_reported);
  out << "Compile...\n" << std::flush;
  const SimulatedRun untuned = simulate_network(model, target, o, {}, warnings);
  out << "Compile...\n" << std::flush;
  const SimulatedRun tuned = simulate_network(model, target, o, records, warnings);
  const vta::VtaConfig config = vta::config_of(target);
  out << "Evaluate inference time cost (VTA simulated)...\n";
  for (const auto& [title, run] : {std::pair{"Network compiled with the default configs (no tuning):", untuned},
                                   {"Network with its kernels tuned:", tuned}})
    out << fmt::format("{}\n  {} cycles = {:.2f} ms at {} MHz, GEMM core busy {:.1f}%; {} of {} VTA kernels tuned\n",
                       title, run.cycles, config.seconds(run.cycles) * 1e3, config.hw_freq_mhz,
                       run.cycles ? 100.0 * run.gemm_cycles / run.cycles : 0.0, run.tuned, run.kernels);
  out << fmt::format("kernel-tuned / default: {:.3f} (simulated cycles)\n", double(tuned.cycles) / untuned.cycles);
  return result;
}

}  // namespace tessera::driver
