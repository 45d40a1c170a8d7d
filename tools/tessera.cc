// tessera: the command line of Tessera.
//
//   tessera op OPERATOR [shape and attribute flags] [--schedule FILE] [--threads N]
//              [--show] [--check] [--compare onednn] [--repeat N]
//
// builds one operator's workload, compiles it under a schedule (a JSON trace, or
// the best hand-written one), and optionally prints the loops and C, checks the
// output against the reference, and times it against oneDNN in the same process.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "codegen/c_printer.h"
#include "codegen/target.h"
#include "interleaved_timer.h"
#include "onednn.h"
#include "onednn_workload.h"
#include "ops/registry.h"
#include "runtime/thread_pool.h"
#include "schedule/manual_schedule.h"
#include "schedule/trace.h"
#include "tessera/error.h"
#include "tessera_kernel.h"
#include "tir/printer.h"

namespace tessera::cli {

// `tessera op`: each flag is one field here (shapes are kept as text until they
// are parsed, so that an error can name the flag and the text).
struct OpCommandOptions {
  std::string op;
  std::string input, weight, padding;  // "1x64x56x56"; padding "1x1" or "1x1x2x2"
  ops::OpArgs args;                    // every other operator argument
  std::string schedule_file;           // empty: the best hand-written schedule
  int threads = 0;                     // 0: one per core
  bool show = false;
  bool check = false;
  std::string compare;      // "" or "onednn"
  int repeat = 5;           // measurements of each side
  int min_repeat_ms = 200;  // each measurement lasts at least this long
};

// "1x64x56x56" -> {1, 64, 56, 56}; the error names the flag and the value.
ops::Shape parse_shape(const std::string& flag, const std::string& text) {
  ops::Shape shape;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, 'x')) {
    int64_t value = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (ec != std::errc() || end != part.data() + part.size() || value < 0)
      throw Error(fmt::format(
          "{} {}: '{}' is not a non-negative integer (expected a shape like 1x64x56x56)", flag,
          text, part));
    shape.push_back(value);
  }
  if (shape.empty() || text.back() == 'x')
    throw Error(fmt::format("{} {}: expected a shape like 1x64x56x56", flag, text));
  return shape;
}

schedule::Trace read_schedule(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("--schedule " + path + ": cannot open the file");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return schedule::Trace::parse(text.str());
  } catch (const Error& e) {
    throw Error("--schedule " + path + ": " + e.what());
  }
}

void add_op_command(CLI::App& app, OpCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("op", "compile, check and time one operator");
  ops::OpArgs& a = o.args;
  cmd->add_option("operator", o.op,
                  "one of: " + fmt::format("{}", fmt::join(ops::op_names(), ", ")))
      ->required();
  cmd->add_option("--input", o.input, "main operand shape, e.g. 1x64x56x56 (conv2d: NCHW)");
  cmd->add_option("--weight", o.weight, "second operand shape, e.g. 64x64x3x3 (conv2d: OIHW)");
  cmd->add_option("--stride", a.stride, "window stride")->capture_default_str();
  cmd->add_option("--pad", a.pad, "padding on every side")->capture_default_str();
  cmd->add_option("--padding", o.padding, "explicit padding HxW or TOPxLEFTxBOTTOMxRIGHT");
  cmd->add_option("--dilation", a.dilation, "kernel dilation")->capture_default_str();
  cmd->add_option("--layout", a.layout, "conv2d: NCHW, NHWC or NCHWc; dense: NK or packed")
      ->check(CLI::IsMember({"NCHW", "NHWC", "NCHWc", "NK", "packed"}))
      ->capture_default_str();
  cmd->add_option("--ic-bn", a.ic_bn, "NCHWc input channel block (0: automatic)");
  cmd->add_option("--oc-bn", a.oc_bn, "NCHWc output channel block, dense packed weight block (0: automatic)");
  cmd->add_flag("--bias", a.bias, "add a bias per output channel");
  cmd->add_flag("--relu", a.relu, "apply relu to the output");
  cmd->add_option("--pool", a.pool, "pooling window")->capture_default_str();
  cmd->add_flag("--count-include-pad", a.count_include_pad, "avg_pool divides by the full window");
  cmd->add_option("--clip-min", a.clip_min, "clip lower bound")->capture_default_str();
  cmd->add_option("--clip-max", a.clip_max, "clip upper bound")->capture_default_str();
  cmd->add_option("--axis", a.axis, "bias_add channel axis")->capture_default_str();
  cmd->add_option("--schedule", o.schedule_file,
                  "JSON schedule trace (default: best hand-written)");
  cmd->add_option("--threads", o.threads, "threads (0: one per core)")->capture_default_str();
  cmd->add_flag("--show", o.show, "print the lowered loops and the C-like kernel");
  cmd->add_flag("--check", o.check, "compare the output with the reference");
  cmd->add_option("--compare", o.compare, "baseline timed in the same run")
      ->check(CLI::IsMember({"onednn"}));
  cmd->add_option("--repeat", o.repeat, "measurements of each side")->capture_default_str();
  cmd->add_option("--min-repeat-ms", o.min_repeat_ms, "shortest measurement")
      ->capture_default_str();
}

void print_timing(const std::string& who, const baseline::SideTiming& t, double flops) {
  fmt::print("{}: mean {:.3f} ms, min {:.3f} ms, {:.1f} GFLOPS\n", who, t.mean_cost() * 1e3,
             t.min_cost() * 1e3, baseline::gflops(flops, t.min_cost()));
}

int run_op(OpCommandOptions o) {
  if (!o.input.empty()) o.args.input = parse_shape("--input", o.input);
  if (!o.weight.empty()) o.args.weight = parse_shape("--weight", o.weight);
  if (!o.padding.empty()) o.args.padding = parse_shape("--padding", o.padding);
  if (o.threads < 0)
    throw Error(fmt::format("--threads {}: must be 0 (one per core) or more", o.threads));
  if (o.repeat < 1) throw Error(fmt::format("--repeat {}: must be at least 1", o.repeat));
  if (!o.compare.empty() && !baseline::has_onednn_counterpart(o.op))
    throw Error(fmt::format("--compare {}: only conv2d and dense have a oneDNN counterpart, not {}",
                            o.compare, o.op));
  const int threads = o.threads > 0 ? o.threads : int(std::thread::hardware_concurrency());

  std::optional<schedule::Trace> trace_from_file;  // read first: a bad file fails before any output
  if (!o.schedule_file.empty()) trace_from_file = read_schedule(o.schedule_file);

  ops::Workload workload = ops::make_workload(o.op, o.args);
  fmt::print("{}\n", workload.dag.print());
  const codegen::Target target = codegen::Target::host();
  const schedule::Trace trace =
      trace_from_file ? *trace_from_file
                      : schedule::best_manual_schedule(workload.dag, target.vector_bits);
  runtime::set_num_threads(threads);
  baseline::TesseraKernel kernel(workload, trace, target);
  if (o.show) {
    fmt::print("schedule: {}\n\n", trace.dump());  // a --schedule file can hold this line
    fmt::print("{}\n", tir::to_string(kernel.lowered()));
    fmt::print("{}\n", codegen::to_c(kernel.lowered()));
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
    print_timing("tessera",
                 baseline::time_interleaved([&] { kernel.run(); }, nullptr, timing).first, flops);
    return 0;
  }
  baseline::set_threads(threads);
  baseline::OneDnnLayer onednn = baseline::make_onednn_layer(o.op, o.args);
  fmt::print("onednn kernel: {} ({})\n", onednn.implementation(), baseline::version());
  auto [mine, theirs] =
      baseline::time_interleaved([&] { kernel.run(); }, [&] { onednn.run(); }, timing);
  print_timing("tessera", mine, flops);
  print_timing("onednn", theirs, flops);
  fmt::print("ratio tessera/onednn: {:.2f}\n",
             baseline::gflops(flops, mine.min_cost()) / baseline::gflops(flops, theirs.min_cost()));
  return 0;
}

}  // namespace tessera::cli

int main(int argc, char** argv) {
  using namespace tessera;
  CLI::App app{"Tessera, an auto-tuning deep-learning compiler", "tessera"};
  app.require_subcommand(1);
  // Parse errors read like every other error of the tool.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("tessera: error: {} (run with --help for usage)\n", e.what());
  });
  cli::OpCommandOptions op_options;
  cli::add_op_command(app, op_options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;  // --help is a success, any other a plain failure
  }
  try {
    if (app.got_subcommand("op")) return cli::run_op(op_options);
  } catch (const Error& e) {
    std::fprintf(stderr, "tessera: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {  // a bug rather than bad input, but still one line
    std::fprintf(stderr, "tessera: error: internal: %s\n", e.what());
    return 1;
  }
  return 0;
}
