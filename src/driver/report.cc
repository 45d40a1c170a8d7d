#include "driver/report.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <thread>

#include "driver/compile.h"
#include "driver/parse_target.h"
#include "graph/model_source.h"
#include "report/html_report.h"
#include "runtime/artifact.h"
#include "tessera/error.h"

namespace tessera::driver {

namespace {

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

// The target a model is compiled for: --target, else the logs' first CPU
// target this host runs (their records then apply), else the host's.
target::Target report_target(const ReportOptions& o, const report::TuningHistory& history) {
  if (!o.target.empty()) return parse_target(o.target);
  for (const report::TaskHistory& task : history.tasks) try {
      const target::Target t = target::Target::parse(task.target_text);
      if (t.is_gpu()) continue;
      target::require_runnable_here(t);
      return t;
    } catch (const std::exception&) {
      // Another machine's or a damaged target: the host instead.
    }
  return target::Target::host();
}

// A task's weight and flop count from the kernels of the model that run its
// records: an auto-scheduler task is a kernel's own DAG, a template task the
// anchor key its kernels look records up under.
void attach_model(report::TuningHistory& history, const report::ModelProfile& model) {
  for (report::TaskHistory& task : history.tasks) {
    int weight = 0;
    double flop = 0;
    for (const report::KernelProfile& k : model.kernels) {
      const bool match = task.task_name == "autoschedule" ? k.workload_key == task.workload_key
                                                          : !k.task_key.empty() && k.task_key == task.workload_key;
      if (!match) continue;
      weight += k.calls;
      if (flop == 0) flop = k.flop;
    }
    if (weight > 0) task.weight = weight;
    if (task.flop == 0) task.flop = flop;
  }
}

}  // namespace

std::string make_report(const ReportOptions& o, std::ostream& log) {
  report::ReportInput in;
  in.host = cpu_name();
  in.command = o.command;
  log << fmt::format("reading {} log{}\n", o.logs.size(), o.logs.size() == 1 ? "" : "s");
  in.tuning = report::read_tuning_history(o.logs);
  if (in.tuning.damaged > 0) log << fmt::format("{} damaged lines skipped\n", in.tuning.damaged);
  // Every input is read before the model's compile and timing, which take a while.
  if (!o.baseline.empty()) in.baselines = report::read_baselines(o.baseline);

  if (!o.model.empty()) {
    runtime::Artifact artifact;
    if (runtime::is_artifact_file(o.model)) {
      artifact = runtime::read_artifact(o.model);
      log << fmt::format("profiling {} (compiled for {})\n", o.model, artifact.target);
    } else {
      target::Target target = report_target(o, in.tuning);
      if (o.threads > 0) target.threads = o.threads;
      if (target.threads == 0) target.threads = static_cast<int>(std::thread::hardware_concurrency());
      target::require_runnable_here(target);
      CompileOptions c;
      c.records = o.logs;
      c.warnings = &log;
      log << fmt::format("compiling {} for {} with the logs' records\n", o.model, target.str());
      artifact = compile(graph::load_model(o.model), target, c).artifact;
    }
    in.target = artifact.target;
    in.model = report::profile_model(std::move(artifact), o.model, o.threads, o.number, o.repeat);
    // How a benchmark names the model: the zoo name, or the file's name up to its first dot.
    const std::string file = std::filesystem::path(o.model).filename().string();
    in.model_name = file.substr(0, file.find('.'));
    attach_model(in.tuning, *in.model);
    if (o.roofline) {
      const target::Target t = target::Target::parse(in.target);
      in.peak = report::measure_machine_peak(t.vector_bits, in.model->threads);
    }
  } else if (!o.target.empty()) {
    in.target = parse_target(o.target).str();
  }
  return report::render_report(in);
}

}  // namespace tessera::driver
