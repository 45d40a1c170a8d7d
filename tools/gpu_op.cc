#include "gpu_op.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/gpu_source.h"
#include "codegen/nvrtc_compiler.h"
#include "measure/gpu_function.h"
#include "measure/kernel_args.h"
#include "measure/runner.h"
#include "tessera/error.h"
#include "tir/lower.h"
#include "tir/printer.h"

namespace tessera::cli {

namespace {

void print_kernels(const tir::DeviceProgram& p) {
  for (const auto& k : p.kernels)
    fmt::print("kernel {}: grid {} x {} x {}, block {} x {} x {}, {} bytes shared\n", k.name, k.grid[0], k.grid[1],
               k.grid[2], k.block[0], k.block[1], k.block[2], k.shared_bytes);
}

// Runs the function on the target's device, checks it against the
// reference with --check, and times it by the device's clock.
int run_on_device(const OpCommandOptions& o, const ops::Workload& w, const tir::LoweredFunc& f,
                  const target::Target& target) {
  measure::GpuFunction function(f, target);
  if (o.show) fmt::print("{}\n", function.code().source);
  fmt::print("device: {}\n", function.device_name());
  // What a tuning measurement runs on (half-stored inputs already rounded to
  // the values the device holds), and the reference's output with --check.
  measure::KernelArguments arguments = measure::kernel_arguments_of(w.dag, o.check ? w.reference : nullptr);
  std::vector<runtime::NDArray> outputs = measure::make_outputs(w.dag);
  std::vector<float*> args;
  for (auto& a : arguments.inputs) args.push_back(a.data());
  for (auto& a : outputs) args.push_back(a.data());
  function.run(args);
  if (o.check) {
    if (!arguments.expected) throw Error(arguments.expected_error);
    // A half-stored output differs from the fp32 reference by its own rounding.
    const measure::OutputComparison c = measure::compare_output(
        outputs.front(), *arguments.expected,
        arguments.half_outputs ? measure::kHalfStorageTolerance : measure::kDefaultTolerance);
    fmt::print("max abs error {:.1e}, max rel error {:.1e}: {}\n", c.max_abs_error, c.max_rel_error,
               c.ok ? "correct" : "WRONG");
    if (!c.ok) {
      fmt::print("{}\n", c.describe());
      return 1;
    }
  }
  // Each measurement repeats the run for at least min_repeat_ms (the seed's
  // rule), on the device's clock.
  double best = 1e30, total = 0;
  for (int r = 0; r < o.repeat; ++r) {
    double elapsed = 0;
    int runs = 0;
    do {
      elapsed += function.run_timed();
      ++runs;
    } while (elapsed * 1e3 < o.min_repeat_ms && runs < 100000);
    best = std::min(best, elapsed / runs);
    total += elapsed / runs;
  }
  fmt::print("tessera ({} device time): mean {:.4f} ms, min {:.4f} ms, {:.1f} GFLOPS\n", target.kind,
             total / o.repeat * 1e3, best * 1e3, w.dag.flop_count() / best / 1e9);
  return 0;
}

// Compiles the CUDA C with NVRTC and prints each kernel's resources.
void report_cuda_resources(const codegen::GpuSource& source, const target::Target& target) {
  const std::string why = codegen::nvrtc_unavailable_reason();
  if (!why.empty()) throw Error("target '" + target.str() + "': NVRTC cannot compile here: " + why);
  const codegen::CudaBinary binary = codegen::compile_cuda(source.code, target.gpu.arch, source.program.name);
  for (const auto& k : binary.kernels)
    fmt::print("{} for {}: {} registers, {} bytes spilled (stores), {} (loads), {} bytes shared, {} bytes stack\n",
               k.name, target.gpu.arch_name(), k.registers, k.spill_store_bytes, k.spill_load_bytes, k.shared_bytes,
               k.stack_bytes);
  fmt::print("cubin {} bytes, PTX {} bytes\n", binary.cubin.size(), binary.ptx.size());
}

}  // namespace

int run_gpu_op(const OpCommandOptions& o, const target::Target& target, const ops::Workload& w,
               const schedule::Trace& trace) {
  if (!o.compare.empty()) throw Error("--compare " + o.compare + ": a CPU library, not a baseline for " + target.str());
  if (o.assembly) throw Error("--asm: for GPU targets, --show prints the source and the kernels' resources");
  fmt::print("{}\n", w.dag.print());
  const tir::LoweredFunc f = tir::lower(w.dag, trace, w.op);
  if (o.show) fmt::print("schedule: {}\n\n{}\n", trace.dump(), tir::to_string(f));
  const codegen::GpuSource source = codegen::emit_gpu_source(
      f, target.gpu, target.kind == "cuda" ? codegen::GpuDialect::Cuda : codegen::GpuDialect::OpenCl);
  if (o.show && o.compile_only) fmt::print("{}\n", source.code);
  print_kernels(source.program);
  if (target.kind == "cuda") report_cuda_resources(source, target);
  if (o.compile_only) {
    fmt::print("compiled for {} ({}); not run\n", target.str(), target.match_key());
    return 0;
  }
  return run_on_device(o, w, f, target);
}

}  // namespace tessera::cli
