#include "op_command.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "autotvm/history.h"
#include "autotvm/task.h"
#include "codegen/c_printer.h"
#include "codegen/llvm_codegen.h"
#include "target/target.h"
#include "interleaved_timer.h"
#include "onednn.h"
#include "onednn_workload.h"
#include "records/apply_history_best.h"
#include "runtime/thread_pool.h"
#include "autoschedule/tensor_core_fallback.h"
#include "schedule/manual_schedule.h"
#include "flag_checks.h"
#include "gpu_op.h"
#include "target_flags.h"
#include "tessera/error.h"
#include "tir/verify_gpu.h"
#include "tessera_kernel.h"
#include "tir/printer.h"

namespace tessera::cli {

namespace {

schedule::Trace read_schedule(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("--schedule " + path + ": cannot open the file");
  // Checked before reading: a schedule is kilobytes, and the parser refuses
  // more than 4 MiB anyway.
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > (4u << 20)) throw Error("--schedule " + path + ": " + std::to_string(size) + " bytes is no schedule");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return schedule::Trace::parse(text.str());
  } catch (const Error& e) {
    throw Error("--schedule " + path + ": " + e.what());
  }
}

void print_timing(const std::string& who, const baseline::SideTiming& t, double flops) {
  fmt::print("{}: mean {:.3f} ms, min {:.3f} ms, {:.1f} GFLOPS\n", who, t.mean_cost() * 1e3, t.min_cost() * 1e3,
             baseline::gflops(flops, t.min_cost()));
}

// The workload and schedule of a tuned operator: the task's declaration (e.g.
// conv2d in NCHWc) with its best record, or the fallback config with a warning.
std::pair<ops::Workload, schedule::Trace> from_records(const std::string& path, const std::string& op,
                                                       const ops::OpArgs& args, const target::Target& target) {
  autotvm::Task task = autotvm::create_task(op, args, target);
  auto history = records::ApplyHistoryBest::from_file(path, std::cerr);
  autotvm::Dispatched d = autotvm::dispatch(task, history, std::cerr);
  if (d.record)
    fmt::print("record: {:.1f} GFLOPS when tuned, config {}\n", task.flop() / d.record->result.rank_cost() / 1e9,
               d.record->config.dump());
  return {task.workload, d.trace};
}

}  // namespace

CLI::App* add_op_command(CLI::App& app, OpCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("op", "compile, check and time one operator");
  add_operator_flags(cmd, o.op);
  auto* schedule = cmd->add_option("--schedule", o.schedule_file,
                                   "JSON schedule trace (default: best hand-written; GPUs: what a build runs untuned)");
  cmd->add_option("--records", o.records_file, "tuning log: run the operator with its best record")
      ->excludes(schedule);
  cmd->add_option("--threads", o.threads, "threads (0: the target's, else one per core)")
      ->check(at_least(0))
      ->capture_default_str();
  add_target_flag(cmd, o.target, "target to compile for");
  cmd->add_flag("--show", o.show, "print the lowered loops and the C-like kernel");
  cmd->add_flag("--asm", o.assembly, "print the kernel's assembly for the target");
  auto* check = cmd->add_flag("--check", o.check, "compare the output with the reference");
  auto* compare =
      cmd->add_option("--compare", o.compare, "baseline timed in the same run")->check(CLI::IsMember({"onednn"}));
  cmd->add_flag("--compile-only", o.compile_only,
                "compile (and print with --show, --asm) without running: allows a target this host cannot run")
      ->excludes(check)
      ->excludes(compare);
  cmd->add_option("--repeat", o.repeat, "measurements of each side")->capture_default_str();
  cmd->add_option("--min-repeat-ms", o.min_repeat_ms, "shortest measurement")
      ->check(at_least(0))
      ->capture_default_str();
  return cmd;
}

int run_op(const OpCommandOptions& o) {
  const target::Target target = resolve_target(o.target, o.threads);
  require_dtype_runs_on(resolve(o.op), target);
  if (target.is_gpu()) {
    const ops::OpArgs gpu_args = resolve(o.op);
    if (!o.records_file.empty()) {
      auto [w, t] = from_records(o.records_file, o.op.op, gpu_args, target);
      return run_gpu_op(o, target, w, t);
    }
    const ops::Workload w = ops::make_workload(o.op.op, gpu_args);
    // Without a file: what a build runs untuned, tensor cores where they pay.
    return run_gpu_op(o, target, w,
                      o.schedule_file.empty() ? autoschedule::untuned_schedule(w.dag, target)
                                              : read_schedule(o.schedule_file));
  }
  if (!o.compile_only) {
    try {
      target::require_runnable_here(target);
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (--compile-only compiles without running)");
    }
  }
  // NCHWc blocks not given on the command line fill one of the target's vectors.
  const ops::OpArgs args = ops::with_vector_blocks(o.op.op, resolve(o.op), target.vector_lanes());
  const int threads = target.threads;
  if (o.repeat < 1) throw Error(fmt::format("--repeat {}: must be at least 1", o.repeat));
  if (!o.compare.empty() && !baseline::has_onednn_counterpart(o.op.op))
    throw Error(fmt::format("--compare {}: only conv2d, dense and softmax have a oneDNN counterpart, not {}", o.compare,
                            o.op.op));
  std::optional<schedule::Trace> trace_from_file;  // read first: a bad file fails before any output
  if (!o.schedule_file.empty()) trace_from_file = read_schedule(o.schedule_file);

  std::optional<ops::Workload> workload;
  std::optional<schedule::Trace> trace;
  if (!o.records_file.empty()) {
    auto [w, t] = from_records(o.records_file, o.op.op, args, target);
    workload = std::move(w);
    trace = std::move(t);
  } else {
    workload = ops::make_workload(o.op.op, args);
    trace = trace_from_file ? *trace_from_file : schedule::best_manual_schedule(workload->dag, target.vector_unit());
  }
  fmt::print("{}\n", workload->dag.print());
  runtime::set_num_threads(threads);
  baseline::TesseraKernel kernel(*workload, *trace, target);
  if (o.show) {
    fmt::print("schedule: {}\n\n", trace->dump());  // a --schedule file can hold this line
    fmt::print("{}\n", tir::to_string(kernel.lowered()));
    fmt::print("{}\n", codegen::to_c(kernel.lowered()));
  }
  if (o.assembly) fmt::print("{}\n", codegen::emit_assembly(kernel.lowered(), target));
  if (o.compile_only) {
    fmt::print("compiled for {} ({}); not run\n", target.str(), target.match_key());
    return 0;
  }
  if (o.check) {
    baseline::CheckResult c = kernel.check();
    fmt::print("max abs error {:.1e}, max rel error {:.1e}: {}\n", c.max_abs_error, c.max_rel_error,
               c.correct ? "correct" : "WRONG");
    if (!c.correct) {
      fmt::print("{}\n", c.detail);
      return 1;  // timing a wrong kernel would only mislead
    }
  }

  baseline::InterleavedOptions timing{.rounds = o.repeat, .min_repeat_ms = o.min_repeat_ms};
  const double flops = kernel.flop_count();
  if (o.compare.empty()) {
    print_timing("tessera", baseline::time_interleaved([&] { kernel.run(); }, nullptr, timing).first, flops);
    return 0;
  }
  baseline::set_threads(threads);
  baseline::match_target_isa(target);
  baseline::OneDnnLayer onednn = baseline::make_onednn_layer(o.op.op, args);
  fmt::print("tessera target: {}; onednn kernel: {} ({})\n", target.match_key(), onednn.implementation(),
             baseline::version());
  auto [mine, theirs] = baseline::time_interleaved([&] { kernel.run(); }, [&] { onednn.run(); }, timing);
  print_timing("tessera", mine, flops);
  print_timing("onednn", theirs, flops);
  fmt::print("ratio tessera/onednn: {:.2f}\n",
             baseline::gflops(flops, mine.min_cost()) / baseline::gflops(flops, theirs.min_cost()));
  return 0;
}

}  // namespace tessera::cli
