// The GPU templates (dense.gpu on a packed weight, batch_matmul.gpu,
// conv2d_nchw.gpu, conv2d_nchw_winograd.gpu, conv2d_nchw_implicit_gemm.gpu),
// in fp32 and in half storage: their fallback is the hand-written schedule's plan where
// the shape takes it, and configs across the space either run on the
// OpenCL device (PoCL here) equal to the reference, or are refused by the
// GPU verifier in one line, never a wrong answer.
#include <gtest/gtest.h>

#include <random>

#include "../codegen/gpu_run_util.h"
#include "autotvm/task.h"
#include "codegen/gpu_source.h"
#include "measure/kernel_args.h"
#include "runtime/opencl_device.h"
#include "tessera/error.h"
#include "tir/lower.h"
#include "tir/printer.h"

namespace tessera::autotvm {
namespace {

// Runs config `c` of `task` on the OpenCL device: true when it ran and
// matched the reference, false when the verifier refused it.
bool runs_correctly(const Task& task, const ConfigEntity& c, const target::Target& opencl) {
  const ops::Workload& w = task.workload;
  tir::LoweredFunc f = tir::lower(w.dag, task.instantiate(c), w.op);
  try {
    codegen::emit_gpu_source(f, opencl.gpu, codegen::GpuDialect::OpenCl);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GPU kernel "), std::string::npos) << e.what();
    return false;
  }
  // A task in half storage (dtype float16) against the reference on its
  // inputs rounded to halves, its output rounded after.
  const bool half = task.args.dtype == "float16";
  const codegen::test::GpuRun run = half ? codegen::test::run_half_against_reference(w, f, opencl, 7)
                                         : codegen::test::run_against_reference(w, f, opencl, 7);
  EXPECT_LE(run.max_relative_error, half ? measure::kHalfStorageTolerance : 1e-5)
      << task.name() << " " << c.to_json().dump();
  return true;
}

void expect_space_runs(const std::string& op, const ops::OpArgs& args, const std::string& name) {
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const target::Target opencl = target::Target::parse("opencl");
  const Task task = create_task(op, args, opencl);
  ASSERT_EQ(task.name(), name);
  std::mt19937_64 rng(11);
  int ran = runs_correctly(task, task.space.fallback(), opencl) ? 1 : 0;
  for (int i = 0; i < 6; ++i) ran += runs_correctly(task, task.space.get(rng() % task.space.size()), opencl);
  EXPECT_GE(ran, 2) << name << ": too few configs a block holds";
}

TEST(GpuTemplates, Conv2dFallbackIsTheHandWrittenPlan) {
  ops::OpArgs a;
  a.input = {1, 64, 28, 28};
  a.weight = {64, 64, 3, 3};
  a.pad = 1;
  const Task task = create_task("conv2d", a, target::Target::parse("opencl"));
  EXPECT_EQ(task.name(), "conv2d_nchw.gpu");
  const nlohmann::json f = task.space.fallback().to_json();
  // 8 channel threads of 4, 4 row threads, 7 column threads, 8 channels a
  // step, four ranges of 16 channels summed apart (schedule::gpu_conv_plan).
  EXPECT_EQ(f.at("tile_f"), nlohmann::json({2, 8, 4})) << f.dump();
  EXPECT_EQ(f.at("tile_y"), nlohmann::json({7, 4, 1})) << f.dump();
  EXPECT_EQ(f.at("tile_x"), nlohmann::json({4, 7, 1})) << f.dump();
  EXPECT_EQ(f.at("tile_rc"), nlohmann::json({2, 4, 8})) << f.dump();
}

// auto_unroll_max_step (TVM's knob): at 1500 the accumulator's window loops
// are unrolled too, at 0 only the register tiles; both equal the reference.
TEST(GpuTemplates, Conv2dAutoUnrollUnrollsTheWindow) {
  ops::OpArgs a;
  a.input = {1, 8, 12, 12};
  a.weight = {16, 8, 3, 3};
  a.pad = 1;
  const target::Target opencl = target::Target::parse("opencl");
  const Task task = create_task("conv2d", a, opencl);
  nlohmann::json values = task.space.fallback().to_json();
  for (int unroll : {0, 1500}) {
    values["auto_unroll_max_step"] = unroll;
    const ConfigEntity c = task.space.from_json(values);
    const std::string text = tir::to_string(tir::lower(task.workload.dag, task.instantiate(c), task.workload.op));
    EXPECT_EQ(text.find("for ry in 0..3 (unrolled)") != std::string::npos, unroll > 0) << unroll << "\n" << text;
    if (runtime::opencl_unavailable_reason().empty()) EXPECT_TRUE(runs_correctly(task, c, opencl)) << unroll;
  }
}

// pipeline_fetches: at 1 the step's fetches are staged and the next step's
// loaded while this one computes (tir/pipeline_fetches.h), at 0 not; both
// equal the reference. A record from before the knob (its values without
// it) reads as 0.
TEST(GpuTemplates, PipelineFetchesLoadsTheNextStepAheadAndOlderRecordsReadAsOff) {
  const target::Target opencl = target::Target::parse("opencl");
  ops::OpArgs conv;
  conv.input = {1, 16, 12, 12};
  conv.weight = {16, 16, 3, 3};
  conv.pad = 1;
  ops::OpArgs dense;
  dense.input = {64, 128};
  dense.weight = {64, 128};
  for (const Task& task : {create_task("conv2d", conv, opencl), create_task("dense", dense, opencl)}) {
    nlohmann::json values = task.space.fallback().to_json();
    EXPECT_EQ(values.at("pipeline_fetches"), 0) << task.name();
    // 4 steps: of 4 input channels, or 32 of K.
    if (task.name() == "conv2d_nchw.gpu")
      values["tile_rc"] = {4, 1, 4};
    else
      values["tile_k"] = {4, 1, 32};
    for (int pipeline : {0, 1}) {
      values["pipeline_fetches"] = pipeline;
      const ConfigEntity c = task.space.from_json(values);
      const tir::LoweredFunc f = tir::lower(task.workload.dag, task.instantiate(c), task.workload.op);
      const std::string loops = tir::to_string(tir::prepare_for_gpu_codegen(f));
      EXPECT_EQ(loops.find(" + 1) < 4)") != std::string::npos, pipeline == 1) << task.name() << "\n" << loops;
      if (runtime::opencl_unavailable_reason().empty()) EXPECT_TRUE(runs_correctly(task, c, opencl)) << pipeline;
    }
    values.erase("pipeline_fetches");
    EXPECT_EQ(task.space.from_json(values).value("pipeline_fetches"), 0) << task.name();
  }
}

TEST(GpuTemplates, Conv2dConfigsRunOrAreRefusedOnOpenCl) {
  ops::OpArgs a;
  a.input = {1, 8, 12, 12};
  a.weight = {16, 8, 3, 3};
  a.pad = 1;
  a.stride = 1;
  a.bias = a.relu = true;
  expect_space_runs("conv2d", a, "conv2d_nchw.gpu");
}

// tile_rc's middle part: the 8 input channels in 1, 2, 4 or 8 ranges, each
// summed in blocks of its own and added by a second kernel; every split
// equals the reference.
TEST(GpuTemplates, Conv2dSplitRcRangesAddUpToTheReference) {
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  ops::OpArgs a;
  a.input = {1, 8, 6, 6};
  a.weight = {16, 8, 3, 3};
  a.pad = 1;
  a.bias = a.relu = true;
  const target::Target opencl = target::Target::parse("opencl");
  const Task task = create_task("conv2d", a, opencl);
  nlohmann::json values = task.space.fallback().to_json();
  values["tile_f"] = {2, 4, 2};
  values["tile_y"] = {3, 2, 1};
  values["tile_x"] = {1, 6, 1};
  for (int64_t ranges : {1, 2, 4, 8}) {
    values["tile_rc"] = {1, ranges, 8 / ranges};
    const ConfigEntity c = task.space.from_json(values);
    const tir::LoweredFunc f = tir::lower(task.workload.dag, task.instantiate(c), task.workload.op);
    const codegen::GpuSource source = codegen::emit_gpu_source(f, opencl.gpu, codegen::GpuDialect::OpenCl);
    EXPECT_EQ(source.program.kernels.size(), ranges > 1 ? 2u : 1u) << ranges;
    EXPECT_EQ(source.program.kernels.at(0).grid[2], 2 * ranges) << ranges;  // channel blocks x ranges
    EXPECT_TRUE(runs_correctly(task, c, opencl)) << ranges;
  }
}

TEST(GpuTemplates, DepthwiseConfigsRunOrAreRefusedOnOpenCl) {
  ops::OpArgs a;
  a.input = {1, 16, 12, 12};
  a.weight = {16, 1, 3, 3};
  a.pad = 1;
  a.stride = 1;
  a.bias = a.relu = true;
  expect_space_runs("depthwise_conv2d", a, "depthwise_conv2d_nchw.gpu");
}

TEST(GpuTemplates, PackedDenseConfigsRunOrAreRefusedOnOpenCl) {
  ops::OpArgs a;
  a.input = {64, 32};
  a.weight = {64, 32};
  a.layout = "packed";
  a.oc_bn = 16;
  expect_space_runs("dense", a, "dense.gpu");
}

TEST(GpuTemplates, BatchMatmulConfigsRunOrAreRefusedOnOpenCl) {
  ops::OpArgs a;
  a.input = {2, 64, 16};
  a.weight = {2, 64, 16};
  expect_space_runs("batch_matmul", a, "batch_matmul.gpu");
}

ops::OpArgs winograd_args(ops::Shape input, ops::Shape weight, int64_t tile) {
  ops::OpArgs a;
  a.input = std::move(input);
  a.weight = std::move(weight);
  a.pad = 1;
  a.winograd_tile = tile;
  a.bias = a.relu = true;
  return a;
}

// 64 channels of 28 x 28 in F(4x4): 49 tiles per image, 36 products of 64
// x 49 over 64 channels; the fallback is the hand-written plan.
TEST(GpuTemplates, WinogradFallbackIsTheHandWrittenPlan) {
  const Task task = create_task("conv2d_nchw_winograd", winograd_args({1, 64, 28, 28}, {64, 64, 3, 3}, 4),
                                target::Target::parse("opencl"));
  EXPECT_EQ(task.name(), "conv2d_nchw_winograd.gpu");
  const nlohmann::json f = task.space.fallback().to_json();
  // schedule::gpu_winograd_plan: 16 channel threads of 4, 7 tile threads of 1 (the largest tile dividing 49), 8
  // channels a step; 252 blocks, yet halves of 64 channels would add too few products to split.
  EXPECT_EQ(f.at("tile_y"), nlohmann::json({1, 16, 4})) << f.dump();
  EXPECT_EQ(f.at("tile_x"), nlohmann::json({7, 7, 1})) << f.dump();
  EXPECT_EQ(f.at("tile_k"), nlohmann::json({8, 1, 8})) << f.dump();
}

// A ragged output (7 x 7 in tiles of 4: the last tile row half outside), two
// images in tiles of 2, each with bias and relu.
TEST(GpuTemplates, WinogradConfigsRunOrAreRefusedOnOpenCl) {
  expect_space_runs("conv2d_nchw_winograd", winograd_args({1, 16, 7, 7}, {16, 16, 3, 3}, 4),
                    "conv2d_nchw_winograd.gpu");
  expect_space_runs("conv2d_nchw_winograd", winograd_args({2, 8, 6, 6}, {16, 8, 3, 3}, 2), "conv2d_nchw_winograd.gpu");
}

// A convolution as one matrix product (ops/conv2d_implicit_gemm.h): the
// product's tiles write the NCHW image; a 3x3 window over 8 channels (72,
// not a multiple of 16: the padded columns are zeros), and a strided batch
// of two whose positions cross images.
// A 3x3 convolution, padded to keep its size, with bias and relu.
ops::OpArgs conv3x3_args(ops::Shape input, ops::Shape weight, const std::string& dtype = "float32") {
  ops::OpArgs a;
  a.input = std::move(input);
  a.weight = std::move(weight);
  a.pad = 1;
  a.bias = a.relu = true;
  a.dtype = dtype;
  return a;
}

TEST(GpuTemplates, ImplicitGemmConfigsRunOrAreRefusedOnOpenCl) {
  ops::OpArgs a = conv3x3_args({1, 8, 12, 12}, {16, 8, 3, 3});
  expect_space_runs("conv2d_nchw_implicit_gemm", a, "conv2d_nchw_implicit_gemm.gpu");
  a.input = {2, 16, 9, 9};
  a.weight = {32, 16, 3, 3};
  a.stride = 2;
  expect_space_runs("conv2d_nchw_implicit_gemm", a, "conv2d_nchw_implicit_gemm.gpu");
}

TEST(GpuTemplates, ImplicitGemmIsUngroupedNchwOnly) {
  ops::OpArgs a;
  a.input = {1, 8, 12, 12};
  a.weight = {16, 4, 3, 3};
  EXPECT_THROW(
      {
        try {
          ops::make_workload("conv2d_nchw_implicit_gemm", a);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("ungrouped only"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

// --dtype float16 networks tune the same templates on their half kernels
// (fp32 arithmetic, half loads and stores): every template's configs run
// within the half tolerance or are refused.
TEST(GpuTemplates, HalfStorageConfigsRunOrAreRefusedOnOpenCl) {
  const ops::OpArgs conv = conv3x3_args({1, 8, 12, 12}, {16, 8, 3, 3}, "float16");
  expect_space_runs("conv2d", conv, "conv2d_nchw.gpu");
  expect_space_runs("conv2d_nchw_implicit_gemm", conv, "conv2d_nchw_implicit_gemm.gpu");
  expect_space_runs("depthwise_conv2d", conv3x3_args({1, 16, 12, 12}, {16, 1, 3, 3}, "float16"),
                    "depthwise_conv2d_nchw.gpu");
  ops::OpArgs dense;
  dense.input = {64, 32};
  dense.weight = {64, 32};
  dense.dtype = "float16";
  expect_space_runs("dense", dense, "dense.gpu");
}

}  // namespace
}  // namespace tessera::autotvm
