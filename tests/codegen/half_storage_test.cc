// Half storage (ir::DType::Float16, ir::with_half_storage): the host's
// conversions against IEEE 754's values, the DAG rewrite, and kernels that
// read and write halves while computing in fp32: on the OpenCL device
// (vload_half / vstore_half_rte, PoCL here) and through LLVM on this host
// (fpext / fptrunc) equal to the fp32 reference on
// the same rounded inputs within the output's rounding, and as CUDA C
// through NVRTC for sm_80 and sm_90 (PTX conversions, no headers).
#include "ir/half_storage.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gpu_run_util.h"
#include "codegen/gpu_source.h"
#include "codegen/llvm_codegen.h"
#include "codegen/module.h"
#include "codegen/nvrtc_compiler.h"
#include "measure/gpu_function.h"
#include "ops/registry.h"
#include "runtime/opencl_device.h"
#include "schedule/default_schedule.h"
#include "schedule/gpu_schedule.h"
#include "support/half.h"
#include "tir/lower.h"

namespace tessera {
namespace {

using support::float_to_half;
using support::half_to_float;

TEST(HalfConversion, KnownValuesAndRounding) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(0.1f), 0x2e66);               // 0.0999755859375
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);           // the largest half
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);           // below the rounding boundary
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);           // a tie past the largest: infinity
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // a tie to even: zero
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -26)), 0x0001);  // 0.75 of the smallest: up
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // a tie to even: down
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // a tie to even: up
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
  // Every half that is a number reads back to itself.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaN
    ASSERT_EQ(float_to_half(half_to_float(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
}

ops::Workload dense_bias_relu() {
  ops::OpArgs a;
  a.input = {64, 40};
  a.weight = {48, 40};
  a.bias = a.relu = true;
  return ops::make_workload("dense", a);
}

TEST(HalfStorage, ArgumentsBecomeHalvesIntermediatesStayFloat) {
  const ops::Workload w = dense_bias_relu();
  const ir::ComputeDAG half = ir::with_half_storage(w.dag);
  ASSERT_EQ(half.tensors().size(), w.dag.tensors().size());
  for (const auto& t : half.arguments()) EXPECT_EQ(t->dtype, ir::DType::Float16) << t->name;
  for (const auto& t : half.tensors())
    if (!t->is_placeholder() && t != half.outputs()[0]) EXPECT_EQ(t->dtype, ir::DType::Float32) << t->name;
  EXPECT_NE(half.workload_key(), w.dag.workload_key());
  EXPECT_NE(half.canonical().find("float16"), std::string::npos);
}

// Runs the half-stored kernel on the OpenCL device; the reference computes
// in fp32 on the same rounded inputs, so what differs is the output's own
// rounding (half an ulp, 2^-11 relative) and the order of additions.
double half_kernel_error(const ops::Workload& w, const schedule::Trace& trace) {
  const tir::LoweredFunc f = tir::lower(ir::with_half_storage(w.dag), trace, w.op);
  const codegen::test::GpuRun run = codegen::test::run_half_against_reference(w, f, target::Target::parse("opencl"), 3);
  EXPECT_NE(run.source.find("vstore_half_rte("), std::string::npos) << run.source;
  return run.max_relative_error;
}

TEST(HalfStorage, TiledDenseAndConvolutionOnOpenClMatchTheFp32Reference) {
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const ops::Workload dense = dense_bias_relu();
  EXPECT_LE(half_kernel_error(dense, schedule::best_gpu_schedule(dense.dag, {})), 2e-3);
  ops::OpArgs c;
  c.input = {1, 8, 14, 14};
  c.weight = {16, 8, 3, 3};
  c.pad = 1;
  c.bias = c.relu = true;
  const ops::Workload conv = ops::make_workload("conv2d", c);
  EXPECT_LE(half_kernel_error(conv, schedule::best_gpu_schedule(conv.dag, {})), 2e-3);
  EXPECT_LE(half_kernel_error(conv, schedule::gpu_default_schedule(conv.dag, 1024)), 2e-3);
}

// The LLVM emitter: the default CPU schedule (vectorized) of the half DAG,
// called with arrays of halves.
TEST(HalfStorage, LlvmKernelsReadAndWriteHalves) {
  const ops::Workload w = dense_bias_relu();
  const ir::ComputeDAG half = ir::with_half_storage(w.dag);
  const tir::LoweredFunc f = tir::lower(half, schedule::default_schedule(half), "kernel");
  const codegen::Module m = codegen::Module::load_object(codegen::compile_to_object(f, target::Target::host()));
  std::vector<std::vector<uint16_t>> halves;
  std::vector<std::vector<float>> inputs;
  uint32_t seed = 5;
  for (const auto& p : w.dag.placeholders()) {
    inputs.push_back(ops::test::random_data(p->num_elements(), seed++));
    halves.emplace_back();
    for (float& x : inputs.back()) {
      halves.back().push_back(float_to_half(x));
      x = half_to_float(halves.back().back());
    }
  }
  halves.emplace_back(w.dag.outputs()[0]->num_elements(), 0);
  std::vector<void*> args;
  for (auto& h : halves) args.push_back(h.data());
  m.function("kernel")(args.data());
  std::vector<const float*> in;
  for (const auto& v : inputs) in.push_back(v.data());
  std::vector<float> want(halves.back().size()), got;
  w.reference(in, want.data());
  for (float& x : want) x = half_to_float(float_to_half(x));
  for (uint16_t h : halves.back()) got.push_back(half_to_float(h));
  EXPECT_LE(ops::test::max_relative_error(got, want), 2e-3);
}

TEST(HalfStorage, CudaSourceCompilesWithNvrtcForAmpereAndHopper) {
  if (std::string why = codegen::nvrtc_unavailable_reason(); !why.empty()) GTEST_SKIP() << "NVRTC: " << why;
  const ops::Workload w = dense_bias_relu();
  const ir::ComputeDAG half = ir::with_half_storage(w.dag);
  const tir::LoweredFunc f = tir::lower(half, schedule::best_gpu_schedule(w.dag, {}), w.op);
  const codegen::GpuSource source = codegen::emit_gpu_source(f, {}, codegen::GpuDialect::Cuda);
  EXPECT_NE(source.code.find("unsigned short* __restrict__"), std::string::npos) << source.code;
  EXPECT_NE(source.code.find("tsr_f2h("), std::string::npos) << source.code;
  for (int arch : {80, 90}) {
    const codegen::CudaBinary binary = codegen::compile_cuda(source.code, arch, w.op);
    EXPECT_EQ(binary.kernels.size(), source.program.kernels.size()) << binary.log;
  }
}

}  // namespace
}  // namespace tessera
