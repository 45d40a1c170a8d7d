#include "model_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>

#include "compile/build.h"
#include "driver/kernel_check.h"
#include "driver/compile.h"
#include "driver/extract_tasks.h"
#include "driver/graph_tuner.h"
#include "flag_checks.h"
#include "gpu_model.h"
#include "graph/fuse.h"
#include "graph/interpreter.h"
#include "graph/model_source.h"
#include "graph/printer.h"
#include "measure/kernel_args.h"
#include "model_flags.h"
#include "operator_flags.h"
#include "records/log_file.h"
#include "runtime/artifact.h"
#include "runtime/graph_executor.h"
#include "runtime/npy.h"
#include "runtime/thread_pool.h"
#include "target_flags.h"
#include "varying_model_command.h"
#include "support/write_file.h"
#include "tessera/error.h"

namespace tessera::cli {
namespace {



void add_threads_flag(CLI::App* cmd, ModelCommandOptions& o) {
  cmd->add_option("--threads", o.threads, "threads (0: the target's, else one per core)")
      ->check(at_least(0))
      ->capture_default_str();
}

// An artifact is named .tsr (a damaged one's load then says what is wrong),
// or is a file of another name starting with the artifact's magic.
bool is_artifact(const std::string& path) {
  return (path.size() > 4 && path.substr(path.size() - 4) == ".tsr") || runtime::is_artifact_file(path);
}

graph::Graph load(const ModelCommandOptions& o) { return graph::load_model(o.model, o.model_flags.options()); }

driver::CompileOptions compile_options(const ModelCommandOptions& o) {
  driver::CompileOptions options;
  if (!o.records.empty()) options.records = {o.records};
  options.winograd = !o.no_winograd;
  options.keep_layout = o.keep_layout;
  options.fuse_depthwise_rows = o.fuse_depthwise_rows;
  options.shipped_records = !o.no_shipped_records;
  options.dtype = o.dtype;
  options.convolutions = o.convolutions;
  options.quantize = o.quantization.quantize;
  options.calibrate = o.quantization.calibrate;
  options.quantization = o.quantization.options();
  return options;
}

build::BuildResult compile(const ModelCommandOptions& o, const target::Target& target) {
  const graph::Graph model = load(o);
  const auto start = std::chrono::steady_clock::now();
  build::BuildResult built = driver::compile(model, target, compile_options(o));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  int calls = 0;
  for (const auto& k : built.kernels) calls += k.calls;
  const runtime::MemoryPlan plan = runtime::plan_memory(built.artifact.graph);
  fmt::print("{}: {} nodes, {} after the passes; {} kernels, {} calls; compiled for {} in {:.1f} s\n", o.model,
             model.size(), built.optimized.size(), built.kernels.size(), calls, target.str(), took.count());
  const auto tuned = std::count_if(built.kernels.begin(), built.kernels.end(), [](const auto& k) { return k.tuned; });
  if (!o.records.empty()) {
    fmt::print(
        "{} of {} kernels scheduled by records of {}{}\n", tuned, built.kernels.size(), o.records,
        built.conv_blocks_chosen == 0
            ? ""
            : fmt::format(", channel blocks of {} convolutions chosen by the graph tuner", built.conv_blocks_chosen));
  } else if (tuned > 0) {
    fmt::print("{} of {} kernels scheduled by the shipped pre-tuned records\n", tuned, built.kernels.size());
  }
  fmt::print("activations: {:.2f} MB planned (peak), {:.2f} MB if every tensor had its own buffer\n",
             plan.activation_bytes / 1e6, plan.unplanned_activation_bytes / 1e6);
  return built;
}

// The artifact already read, or the model compiled now.
runtime::GraphExecutor executor_for(const ModelCommandOptions& o, const target::Target& target,
                                    std::optional<runtime::Artifact> artifact) {
  if (artifact) return runtime::GraphExecutor(std::move(*artifact), o.model);
  build::BuildResult built = compile(o, target);
  return runtime::GraphExecutor(std::move(built.artifact), o.model);
}

// Each kernel call's mean time, slowest first, with its share of the total.
void print_profile(runtime::GraphExecutor& ex, int runs) {
  const std::vector<double> seconds = ex.profile(runs);
  double total = 0;
  for (double s : seconds) total += s;
  std::vector<size_t> order(seconds.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return seconds[a] > seconds[b]; });
  fmt::print("{:>9} {:>6}  {:<28} {}\n", "ms", "share", "kernel", "output");
  for (size_t i : order) {
    const auto& call = ex.graph().calls[i];
    const auto& out = ex.graph().tensors[call.outputs[0]];
    fmt::print("{:>9.3f} {:>5.1f}%  {:<28} {} {}\n", seconds[i] * 1e3, 100 * seconds[i] / total, call.kernel, out.name,
               fmt::join(out.shape, "x"));
  }
  fmt::print("{:>9.3f}         total of the calls (their minima)\n", total * 1e3);
}

// A model compiled for VTA after a run: the accelerator's share is its
// simulated cycles at the configuration's clock, not the host's time (which
// simulates it); the CPU's share is `cpu_seconds` per call (measured, the
// accelerator's calls ignored; null: not timed). Per call with `per_call`:
// cycles, time, the GEMM core's utilisation and the bytes moved, in graph order.
void print_accelerator_run(const runtime::GraphExecutor& ex, const std::vector<double>* cpu_seconds, bool per_call) {
  const vta::VtaConfig& config = ex.accelerator_config();
  const std::vector<vta::SimulationStats>& stats = ex.accelerator_stats();
  int64_t cycles = 0, gemm_cycles = 0, bytes = 0, calls = 0;
  double cpu = 0;
  const auto moved = [](const vta::SimulationStats& s) {
    int64_t b = s.bytes_stored;
    for (const auto& [buffer, n] : s.bytes_loaded) b += n;
    return b;
  };
  if (per_call)
    fmt::print("{:>10} {:>9} {:>6} {:>8}  {:<30} {}\n", "cycles", "ms", "GEMM", "MB moved", "kernel", "output");
  for (size_t i = 0; i < ex.graph().calls.size(); ++i) {
    const auto& call = ex.graph().calls[i];
    const auto& out = ex.graph().tensors[call.outputs[0]];
    if (ex.is_accelerator_call(i)) {
      const vta::SimulationStats& s = stats.at(i);
      cycles += s.cycles, gemm_cycles += s.gemm_cycles, bytes += moved(s), ++calls;
      if (per_call)
        fmt::print("{:>10} {:>9.3f} {:>5.1f}% {:>8.2f}  {:<30} {}\n", s.cycles, config.seconds(s.cycles) * 1e3,
                   100 * s.gemm_utilisation(), moved(s) / 1e6, call.kernel, out.name);
    } else {
      if (cpu_seconds) cpu += cpu_seconds->at(i);
      if (per_call)
        fmt::print("{:>10} {:>9} {:>6} {:>8}  {:<30} {} (CPU{})\n", "",
                   cpu_seconds ? fmt::format("{:.3f}", cpu_seconds->at(i) * 1e3) : "-", "", "", call.kernel, out.name,
                   cpu_seconds ? ", measured" : "");
    }
  }
  const double vta_seconds = config.seconds(cycles);
  fmt::print("VTA ({} MHz, {}x{} GEMM core): {} calls, {} cycles = {:.2f} ms simulated; GEMM core busy {:.1f}% of "
             "them; {:.1f} MB moved\n",
             config.hw_freq_mhz, config.block_in(), config.block_out(), calls, cycles, vta_seconds * 1e3,
             cycles ? 100.0 * gemm_cycles / cycles : 0.0, bytes / 1e6);
  if (cpu_seconds)
    fmt::print("inference: {:.2f} ms = {:.2f} ms on VTA (simulated) + {:.2f} ms on the CPU (measured)\n",
               (vta_seconds + cpu) * 1e3, vta_seconds * 1e3, cpu * 1e3);
}

void add_fuse_flag(CLI::App* cmd, ModelCommandOptions& o) {
  cmd->add_option("--fuse-depthwise-rows", o.fuse_depthwise_rows,
                  "one kernel per depthwise 3x3 + 1x1 projection whose output has at least this many rows (0: never)")
      ->check(at_least(0))
      ->capture_default_str();
}

void add_dtype_flag(CLI::App* cmd, ModelCommandOptions& o) {
  cmd->add_option("--dtype", o.dtype,
                  "float16: weights and the values between kernels stored in half precision, arithmetic in fp32 "
                  "(GPU targets; inputs and outputs stay float32)")
      ->check(CLI::IsMember({"float32", "float16"}))
      ->capture_default_str();
  cmd->add_option("--convolutions", o.convolutions,
                  "implicit-gemm: each ungrouped NCHW convolution as one matrix product (tensor cores tile it; GPU "
                  "targets); winograd: 3x3 stride-1 convolutions by Winograd F(4x4, 3x3); direct; auto: "
                  "implicit-gemm for float16 on CUDA sm_80 and later, Winograd on CPUs, else direct")
      ->check(CLI::IsMember({"auto", "direct", "implicit-gemm", "winograd"}))
      ->capture_default_str();
}

void add_shipped_records_flag(CLI::App* cmd, ModelCommandOptions& o) {
  cmd->add_flag("--no-shipped-records", o.no_shipped_records,
                "without --records, keep the hand-written schedules instead of the pre-tuned records shipped for the "
                "target (tessera records shipped)");
}

}  // namespace

ModelCommands add_model_commands(CLI::App& app, ModelCommandOptions& o) {
  ModelCommands c;
  c.compile = app.add_subcommand("compile", "compile a network into one artifact file");
  c.compile->add_option("model", o.model, "zoo name (e.g. resnet-18) or .onnx file")->required();
  add_model_flags(c.compile, o.model_flags, o.no_winograd, o.keep_layout);
  add_fuse_flag(c.compile, o);
  add_target_flag(c.compile, o.target, "target to compile for");
  add_threads_flag(c.compile, o);
  c.compile->add_option("-o,--output", o.output, "the artifact to write (.tsr)")->required();
  c.compile->add_option("--records", o.records, "tuning log: each kernel takes its task's best record");
  add_shipped_records_flag(c.compile, o);
  add_dtype_flag(c.compile, o);
  add_quantize_flags(c.compile, o.quantization);
  c.compile->add_flag("--check", o.check,
                      "run the compiled model on seeded inputs and compare with the reference interpreter");

  c.run = app.add_subcommand("run", "run a compiled artifact once");
  c.run->add_option("artifact", o.model, "a .tsr file from tessera compile")->required();
  c.run->add_option("--input", o.inputs, "an input as .npy ([NAME=]FILE); others are seeded random");
  c.run->add_option("--output", o.output, "write the first output here (.npy)");
  c.run->add_flag("--profile", o.profile, "a model compiled for VTA: each call's simulated cycles, GEMM utilisation and bytes moved");
  add_threads_flag(c.run, o);

  c.bench = app.add_subcommand("bench", "time a network (a zoo name, an .onnx file or an artifact)");
  c.bench->add_option("model", o.model, "zoo name, .onnx file or .tsr artifact")->required();
  add_model_flags(c.bench, o.model_flags, o.no_winograd, o.keep_layout);
  add_fuse_flag(c.bench, o);
  add_target_flag(c.bench, o.target, "target to compile for");
  add_threads_flag(c.bench, o);
  c.bench->add_option("--number", o.number, "runs per measurement")->check(at_least(1))->capture_default_str();
  c.bench->add_option("--repeat", o.repeat, "measurements")->check(at_least(1))->capture_default_str();
  c.bench->add_flag("--profile", o.profile, "also time each kernel call (the fastest of --number runs), slowest first");
  c.bench->add_option("--sizes", o.sizes,
                      "an artifact compiled for a range: the sizes of its dimension to time (default: its buckets)")
      ->delimiter(',')
      ->check(at_least(1));
  c.bench->add_option("--records", o.records, "tuning log: each kernel takes its task's best record");
  add_shipped_records_flag(c.bench, o);
  add_dtype_flag(c.bench, o);
  add_quantize_flags(c.bench, o.quantization);

  c.show = app.add_subcommand("show", "print a network after the passes, kernel by kernel");
  c.show->add_option("model", o.model, "zoo name or .onnx file")->required();
  add_model_flags(c.show, o.model_flags, o.no_winograd, o.keep_layout);
  add_target_flag(c.show, o.target, "target whose vector width picks the channel blocks");
  c.show->add_flag("--tasks", o.tasks, "print the tuning tasks (what tessera tune tunes) instead");
  return c;
}

int run_compile(const ModelCommandOptions& o) {
  support::refuse_to_overwrite(o.output, o.model, "model", "-o");
  const target::Target target = resolve_target(o.target, o.threads);
  if (const graph::ModelOptions model = o.model_flags.options(); model.varying)
    return run_compile_varying(o, model, compile_options(o), target);
  build::BuildResult built = compile(o, target);
  runtime::write_artifact(built.artifact, o.output);
  fmt::print("wrote {}\n", o.output);
  if (!o.check) return 0;
  if (target.is_gpu()) return check_gpu_artifact(o.output, load(o)) ? 0 : 1;
  target::require_runnable_here(target);
  // A quantized network (--quantize, or a quantized model's int8 kernels)
  // keeps every tensor: each kernel is checked on its own.
  const bool integer = !o.quantization.quantize.empty() || driver::has_integer_values(built.optimized);
  runtime::GraphExecutor ex = runtime::GraphExecutor::load(o.output, integer);
  runtime::set_num_threads(target.threads);
  std::vector<runtime::NDArray> inputs;
  for (int i = 0; i < ex.num_inputs(); ++i) {
    inputs.push_back(ex.random_input(i, 42 + static_cast<uint64_t>(i)));
    ex.set_input(i, inputs.back());
  }
  ex.run();
  if (integer) {
    // The integer reference, kernel by kernel (driver/kernel_check.h): every
    // integer value a kernel wrote exactly, the float ones to the usual
    // rounding. The outputs against the graph interpreted whole (where float
    // rounding upstream of a quantize may move a value by one step) and how
    // far they are from the model interpreted as given (--quantize: the float
    // model; a quantized model: its float operators between the quantizations).
    const driver::KernelCheck kernels = driver::check_each_kernel(built.optimized, ex, inputs);
    const bool correct = kernels.exact() && kernels.float_max_rel_error <= measure::kDefaultTolerance;
    fmt::print("integer kernels: {} of {} values equal the integer reference exactly{} (each on its compiled inputs){}; "
               "float kernels: max rel error {:.1e}: {}\n",
               kernels.integer_exact, kernels.integer_values,
               kernels.integer_within_one
                   ? fmt::format(", {} within one step (quantized from a float the kernel rounds its own way)",
                                 kernels.integer_within_one)
                   : "",
               kernels.first_difference.empty() ? "" : " (" + kernels.first_difference + ")",
               kernels.float_max_rel_error, correct ? "correct" : "WRONG");
    const auto whole = graph::interpret(built.optimized, inputs);
    const auto given = graph::interpret(load(o), inputs);
    for (int i = 0; i < ex.num_outputs(); ++i) {
      const measure::OutputComparison w = measure::compare_output(ex.get_output(i), whole.at(i));
      const measure::OutputComparison f = measure::compare_output(ex.get_output(i), given.at(i));
      fmt::print("output '{}': max rel error {:.1e} against the quantized graph interpreted whole, {:.1e} against "
                 "the {}\n",
                 ex.output_name(i), w.max_rel_error, f.max_rel_error,
                 o.quantization.quantize.empty() ? "quantized model's float operators" : "float32 model");
    }
    return correct ? 0 : 1;
  }
  const auto want = graph::interpret(load(o), inputs);
  bool correct = true;
  for (int i = 0; i < ex.num_outputs(); ++i) correct &= check_output("", ex.output_name(i), ex.get_output(i), want.at(i));
  return correct ? 0 : 1;
}

bool check_output(const std::string& prefix, const std::string& name, const runtime::NDArray& got,
                  const runtime::NDArray& want, double tolerance) {
  const measure::OutputComparison c = measure::compare_output(got, want, tolerance);
  fmt::print("{}output '{}': max abs error {:.1e}, max rel error {:.1e}: {}\n", prefix, name, c.max_abs_error,
             c.max_rel_error, c.ok ? "correct" : "WRONG");
  return c.ok;
}

int run_model(const ModelCommandOptions& o) {
  if (!o.output.empty()) {
    support::refuse_to_overwrite(o.output, o.model, "artifact");
    for (const std::string& spec : o.inputs)
      support::refuse_to_overwrite(o.output, spec.substr(spec.find('=') + 1), "array (--input)");
  }
  runtime::Artifact artifact = runtime::read_artifact(o.model);
  if (artifact.varying) return run_varying_model(o, std::move(artifact));
  if (artifact.gpu) return run_gpu_model(o, std::move(artifact));
  runtime::GraphExecutor ex(std::move(artifact), o.model);
  ex.set_threads(o.threads);  // 0: the artifact's own count
  ex.set_random_inputs();
  for (size_t i = 0; i < o.inputs.size(); ++i) {
    const std::string& spec = o.inputs[i];
    const size_t eq = spec.find('=');
    if (eq == std::string::npos) {
      ex.set_input(static_cast<int>(i), runtime::read_npy(spec));
    } else {
      ex.set_input(spec.substr(0, eq), runtime::read_npy(spec.substr(eq + 1)));
    }
  }
  ex.run();
  if (ex.has_accelerator()) print_accelerator_run(ex, nullptr, o.profile);
  for (int i = 0; i < ex.num_outputs(); ++i) {
    const runtime::NDArray out = ex.get_output(i);
    std::string head;
    for (int64_t k = 0; k < out.size() && k < 6; ++k) head += fmt::format(" {:.5f}", out[k]);
    fmt::print("output {} '{}' {}:{}{}\n", i, ex.output_name(i), fmt::join(out.shape(), "x"), head,
               out.size() > 6 ? " ..." : "");
  }
  if (!o.output.empty()) {
    runtime::write_npy(ex.get_output(0), o.output);
    fmt::print("wrote {}\n", o.output);
  }
  return 0;
}

int run_bench(const ModelCommandOptions& o) {
  if (is_artifact(o.model)) {
    // An artifact is compiled already: flags that shape a compilation would be ignored, so they are refused.
    const ModelCommandOptions defaults;
    for (const auto& [given, flag] : {std::pair{o.model_flags.given(), "--batch, --layout, --shape or --dim"},
                                      {!o.target.empty(), "--target"},
                                      {!o.records.empty(), "--records"}, {o.no_winograd, "--no-winograd"},
                                      {o.keep_layout, "--keep-layout"},
                                      {o.fuse_depthwise_rows != defaults.fuse_depthwise_rows, "--fuse-depthwise-rows"}})
      if (given)
        throw Error(std::string(flag) + " shapes a compilation, and '" + o.model +
                    "' is a compiled artifact; compile the model again with it instead");
  }
  if (!o.sizes.empty() && !is_artifact(o.model))
    throw Error("--sizes times an artifact compiled for a range (tessera compile --dim NAME=MIN..MAX)");
  std::optional<runtime::Artifact> artifact;  // read once
  if (is_artifact(o.model)) {
    artifact = runtime::read_artifact(o.model);
    if (artifact->varying) return run_varying_bench(o, std::move(*artifact));
    if (!o.sizes.empty()) throw Error("--sizes: '" + o.model + "' was compiled for fixed shapes");
    if (artifact->gpu) return bench_gpu_model(o, std::move(*artifact));
  }
  const target::Target target = resolve_target(o.target, o.threads);
  if (target.is_gpu()) return bench_gpu_model(o, compile(o, target).artifact);
  if (!is_artifact(o.model)) target::require_runnable_here(target);
  runtime::GraphExecutor ex = executor_for(o, target, std::move(artifact));
  // An artifact runs with the threads it was compiled for unless told otherwise.
  int threads = target.threads;
  if (is_artifact(o.model)) {
    ex.set_threads(o.threads);
    threads = resolve_threads(ex.threads());
  }
  runtime::set_num_threads(threads);
  ex.set_random_inputs();
  if (ex.has_accelerator()) {  // the host's time would be the simulator's
    fmt::print("{} (input {}, {} threads for the CPU's kernels):\n", o.model, fmt::join(ex.input_shape(0), "x"),
               threads);
    const std::vector<double> seconds = ex.profile(o.number);
    print_accelerator_run(ex, &seconds, o.profile);
    return 0;
  }
  const runtime::BenchmarkResult r = ex.benchmark(o.number, o.repeat);
  fmt::print("{} (input {}, {} threads): min {:.2f} ms, median {:.2f} ms\n", o.model, fmt::join(ex.input_shape(0), "x"),
             threads, r.min() * 1e3, r.median() * 1e3);
  fmt::print("{}\n", r.summary());
  if (o.profile) print_profile(ex, o.number);
  return 0;
}

int run_show(const ModelCommandOptions& o) {
  const target::Target target = parse_target_flag(o.target);
  const graph::Graph g = build::optimize_for_target(load(o), target, {}, !o.no_winograd, o.keep_layout);
  if (o.tasks) {
    const std::vector<driver::NetworkTask> tasks = driver::extract_tasks(g, target);
    fmt::print("{}{}: {} tasks\n", driver::print_tasks(tasks), o.model, tasks.size());
    return 0;
  }
  fmt::print("{}\n", graph::print_graph(g));
  const auto groups = graph::fuse_operators(g);
  fmt::print("{} kernels:\n", groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    std::string names;
    for (graph::NodeId id : groups[i].nodes) names += (names.empty() ? "" : " + ") + g.node(id).name;
    fmt::print("  kernel {:>3}: {} -> {}\n", i, names, g.node(groups[i].output()).type.to_string());
  }
  return 0;
}

}  // namespace tessera::cli
