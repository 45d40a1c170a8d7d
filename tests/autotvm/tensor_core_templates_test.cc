// The tensor-core templates (autotvm/gpu/tensor_core.cc): a half product on
// CUDA sm_80 and later takes them, anything else the plain GPU template; their
// knobs are the tensor-core sketch's numbers, with a fallback that fits a
// block; their configs lower to mma.sync code that NVRTC compiles for sm_80
// and sm_90, and compute the reference on the OpenCL device (PoCL here: each
// lane computes its warp's tiles, the loops' meaning) and, on a GPU (the
// device check), on tensor cores.
#include <gtest/gtest.h>

#include <random>

#include "../codegen/gpu_run_util.h"
#include "autoschedule/tensor_core_fallback.h"
#include "autotvm/task.h"
#include "codegen/gpu_source.h"
#include "codegen/nvrtc_compiler.h"
#include "measure/kernel_args.h"
#include "runtime/cuda_backend.h"
#include "runtime/opencl_device.h"
#include "tessera/error.h"
#include "tir/lower.h"
#include "tir/verify_gpu.h"

namespace tessera::autotvm {
namespace {

const target::Target& sm90() {
  static const target::Target t = target::Target::parse("cuda -arch=sm_90");
  return t;
}

ops::OpArgs half_dense(int64_t m, int64_t n, int64_t k) {
  ops::OpArgs a;
  a.input = {m, k};
  a.weight = {n, k};
  a.bias = a.relu = true;
  a.dtype = "float16";
  return a;
}

ops::OpArgs half_batch_matmul() {
  ops::OpArgs a;
  a.input = {2, 32, 48};
  a.weight = {2, 64, 48};
  a.dtype = "float16";
  return a;
}

// 24 channels, 27 taps and 2 x 49 positions: every side padded to 16s.
ops::OpArgs half_implicit_gemm() {
  ops::OpArgs a;
  a.input = {2, 3, 7, 7};
  a.weight = {24, 3, 3, 3};
  a.pad = 1;
  a.bias = a.relu = true;
  a.dtype = "float16";
  return a;
}

TEST(TensorCoreTemplates, HalfProductsOnAmpereAndLaterTakeThemAndNothingElse) {
  EXPECT_EQ(create_task("dense", half_dense(64, 128, 256), sm90()).name(), "dense_tensorcore.cuda");
  EXPECT_EQ(create_task("dense", half_dense(64, 128, 256), target::Target::parse("cuda -arch=sm_80")).name(),
            "dense_tensorcore.cuda");
  EXPECT_EQ(create_task("batch_matmul", half_batch_matmul(), sm90()).name(), "batch_matmul_tensorcore.cuda");
  EXPECT_EQ(create_task("conv2d_nchw_implicit_gemm", half_implicit_gemm(), sm90()).name(),
            "conv2d_nchw_implicit_gemm_tensorcore.cuda");
  // The plain template: before sm_80, on OpenCL, in fp32, rows not a multiple of 16.
  EXPECT_EQ(create_task("dense", half_dense(64, 128, 256), target::Target::parse("cuda -arch=sm_75")).name(),
            "dense.gpu");
  EXPECT_EQ(create_task("dense", half_dense(64, 128, 256), target::Target::parse("opencl")).name(), "dense.gpu");
  ops::OpArgs fp32 = half_dense(64, 128, 256);
  fp32.dtype = "float32";
  EXPECT_EQ(create_task("dense", fp32, sm90()).name(), "dense.gpu");
  EXPECT_EQ(create_task("dense", half_dense(8, 128, 256), sm90()).name(), "dense.gpu");
  // fp32 on a target that allows TF32 takes them, with fp32 operands staged.
  const Task tf32 = create_task("dense", fp32, target::Target::parse("cuda -arch=sm_90 -tf32"));
  EXPECT_EQ(tf32.name(), "dense_tensorcore.cuda");
  auto cuda_source = [](const Task& t) {
    return codegen::emit_gpu_source(tir::lower(t.workload.dag, t.instantiate(t.space.fallback()), "dense"),
                                    t.target.gpu, codegen::GpuDialect::Cuda)
        .code;
  };
  const std::string tf32_source = cuda_source(tf32);
  const std::string half_source = cuda_source(create_task("dense", half_dense(64, 128, 256), sm90()));
  EXPECT_TRUE(codegen::test::kernels_call(tf32_source, "tsr_tc_mma(")) << tf32_source;
  // Staged in shared memory as floats, where half products stage halves.
  EXPECT_EQ(tf32_source.find("__shared__ __align__(16) unsigned short"), std::string::npos) << tf32_source;
  EXPECT_NE(half_source.find("__shared__ __align__(16) unsigned short"), std::string::npos) << half_source;
}

TEST(TensorCoreTemplates, KnobsAreTheSketchsNumbersAndTheFallbackFitsABlock) {
  const Task task = create_task("dense", half_dense(64, 128, 256), sm90());
  // Rows and columns in 16s: [blocks, warps, fragments]; the reduction: [steps, tiles a step].
  EXPECT_EQ(task.space.knob("tile_y").candidates.front().size(), 3u);
  EXPECT_EQ(task.space.knob("tile_x").candidates.front().size(), 3u);
  EXPECT_EQ(task.space.knob("tile_k").candidates.front().size(), 2u);
  EXPECT_NO_THROW(task.space.knob("auto_unroll_max_step"));
  const nlohmann::json f = task.space.fallback().to_json();
  EXPECT_EQ(f.at("tile_y"), nlohmann::json({1, 2, 2})) << f.dump();  // 64 rows: one block of 2 x 2 fragments
  EXPECT_EQ(f.at("tile_x"), nlohmann::json({2, 2, 2})) << f.dump();
  EXPECT_EQ(f.at("tile_k"), nlohmann::json({8, 2})) << f.dump();
  tir::LoweredFunc lowered = tir::lower(task.workload.dag, task.instantiate(task.space.fallback()), "dense");
  EXPECT_NO_THROW(tir::verify_gpu(tir::split_device_kernels(lowered), sm90().gpu));
  // The block's 64 x 64 fp32 outputs, and both operands' 64 x 32 slices
  // staged in half (mma.sync reads their bits; the fetch copies them as
  // they are): 16 KB + 2 x 4 KB, each row padded by 16 bytes
  // (tir/pad_tensor_core_rows.h).
  const codegen::GpuSource cuda = codegen::emit_gpu_source(lowered, sm90().gpu, codegen::GpuDialect::Cuda);
  EXPECT_EQ(cuda.program.kernels.at(0).shared_bytes, 64 * 68 * 4 + 2 * 64 * 40 * 2);
  EXPECT_NE(cuda.code.find("__shared__ __align__(16) unsigned short data_cache[2560];"), std::string::npos)
      << cuda.code;
  EXPECT_EQ(cuda.code.find("tsr_f2h(tsr_h2f("), std::string::npos) << cuda.code;
}

ops::OpArgs half_convolution(ops::Shape input, ops::Shape weight) {
  ops::OpArgs a;
  a.input = std::move(input);
  a.weight = std::move(weight);
  a.pad = a.weight[2] / 2;
  a.dtype = "float16";
  return a;
}

// Where the untuned build takes the fallback on tensor cores
// (autoschedule::tensor_core_fallback_pays), on kernels measured both ways
// on an H200: ResNet-18's layer4 3x3 at batch 1 (8 blocks of K = 4608; 12x
// the CUDA-core time) stays on CUDA cores, at batch 16 (392 blocks; 0.35x)
// takes tensor cores; layer3's at batch 16 (196 blocks, K = 2304; 1.45x)
// stays; ResNet-50's 1x1 of K = 128 at batch 1 (0.33x) and of K = 1024 over
// 196 blocks at batch 16 (0.62x) take them. The template's fallback
// configuration is those numbers.
TEST(TensorCoreTemplates, FallbackTakesTensorCoresWhereItWasMeasuredFaster) {
  auto fallback_of = [](ops::Shape input, ops::Shape weight) {
    const Task task =
        create_task("conv2d_nchw_implicit_gemm", half_convolution(std::move(input), std::move(weight)), sm90());
    const std::optional<autoschedule::TensorCoreFallback> f = autoschedule::tensor_core_fallback(task.workload.dag, sm90());
    if (!f) throw Error("no tensor-core fallback");
    EXPECT_EQ(task.instantiate(task.space.fallback()).dump(), autoschedule::instantiate(f->sketch, f->params).dump());
    return *f;
  };
  const autoschedule::TensorCoreFallback layer4 = fallback_of({1, 512, 7, 7}, {512, 512, 3, 3});
  EXPECT_EQ(layer4.blocks, 8);
  EXPECT_EQ(layer4.reduce, 4608);
  EXPECT_FALSE(autoschedule::tensor_core_fallback_pays(layer4));
  const autoschedule::TensorCoreFallback layer4_batch16 = fallback_of({16, 512, 7, 7}, {512, 512, 3, 3});
  EXPECT_EQ(layer4_batch16.blocks, 392);
  EXPECT_TRUE(autoschedule::tensor_core_fallback_pays(layer4_batch16));
  EXPECT_FALSE(autoschedule::tensor_core_fallback_pays(fallback_of({16, 256, 14, 14}, {256, 256, 3, 3})));
  EXPECT_TRUE(autoschedule::tensor_core_fallback_pays(fallback_of({1, 128, 28, 28}, {512, 128, 1, 1})));
  const autoschedule::TensorCoreFallback projection = fallback_of({16, 1024, 14, 14}, {256, 1024, 1, 1});
  EXPECT_EQ(projection.blocks, 196);
  EXPECT_TRUE(autoschedule::tensor_core_fallback_pays(projection));
  // Narrow products with short reductions: MobileNet-v2's 1x1 projection at
  // 14 x 14 (196 positions in 13 tiles; measured 0.20x the CUDA-core time)
  // takes them; ResNet-18's 3x3 at 14 x 14 (K = 2304: 2.3x) and its layer1
  // at 56 x 56 (K = 576, but 3136 columns: 2.3x) do not.
  const autoschedule::TensorCoreFallback narrow = fallback_of({1, 384, 14, 14}, {64, 384, 1, 1});
  EXPECT_EQ(narrow.columns, 208);
  EXPECT_EQ(narrow.reduce, 384);
  EXPECT_TRUE(autoschedule::tensor_core_fallback_pays(narrow));
  EXPECT_FALSE(autoschedule::tensor_core_fallback_pays(fallback_of({1, 256, 14, 14}, {256, 256, 3, 3})));
  EXPECT_FALSE(autoschedule::tensor_core_fallback_pays(fallback_of({1, 64, 56, 56}, {64, 64, 3, 3})));
  // A batched product's blocks count its batch: 2 x (32 / 32) x (64 / 64).
  const Task batched = create_task("batch_matmul", half_batch_matmul(), sm90());
  EXPECT_EQ(autoschedule::tensor_core_fallback(batched.workload.dag, sm90())->blocks, 2);
  // No fallback in fp32, nor before sm_80.
  EXPECT_FALSE(autoschedule::tensor_core_fallback(create_task("dense", half_dense(64, 128, 256), sm90()).workload.dag,
                                                  target::Target::parse("cuda -arch=sm_75")));
  ops::OpArgs fp32 = half_dense(64, 128, 256);
  fp32.dtype = "float32";
  EXPECT_FALSE(autoschedule::tensor_core_fallback(create_task("dense", fp32, sm90()).workload.dag, sm90()));
}

// The fallback fetches operands read as stored rows 16 bytes a lane (8
// halves: one uint4 move each), and the others an element a lane: a
// dense's input and weight; a convolution's OHWI weights but not its padded
// window, which it copies as half bits, zero off the image; not a weight
// whose rows a padded view's select guards (24 channels, 27 taps), nor a
// batched product's transposed operand.
TEST(TensorCoreTemplates, FallbackFetchesStoredRowsSixteenBytesALane) {
  auto fallback_source = [](const std::string& op, const ops::OpArgs& args) {
    const Task task = create_task(op, args, sm90());
    const std::optional<autoschedule::TensorCoreFallback> f =
        autoschedule::tensor_core_fallback(task.workload.dag, sm90());
    if (!f) throw Error("no tensor-core fallback");
    const tir::LoweredFunc lowered = tir::lower(task.workload.dag, autoschedule::instantiate(f->sketch, f->params), op);
    return codegen::emit_gpu_source(lowered, sm90().gpu, codegen::GpuDialect::Cuda).code;
  };
  auto copies_rows_of = [](const std::string& code, const std::string& buffer) {
    return code.find("= *(const uint4*)(" + buffer + " + ") != std::string::npos;
  };
  const std::string dense = fallback_source("dense", half_dense(64, 128, 256));
  EXPECT_TRUE(copies_rows_of(dense, "data")) << dense;
  EXPECT_TRUE(copies_rows_of(dense, "weight")) << dense;
  const std::string conv =
      fallback_source("conv2d_nchw_implicit_gemm", half_convolution({2, 64, 8, 8}, {64, 64, 3, 3}));
  EXPECT_TRUE(copies_rows_of(conv, "kernel_")) << conv;
  EXPECT_FALSE(copies_rows_of(conv, "data")) << conv;
  EXPECT_NE(conv.find(" ? data["), std::string::npos) << conv;
  EXPECT_NE(conv.find("] : (unsigned short)0;"), std::string::npos) << conv;
  EXPECT_EQ(conv.find("tsr_f2h(tsr_h2f("), std::string::npos) << conv;
  const std::string ragged = fallback_source("conv2d_nchw_implicit_gemm", half_implicit_gemm());
  EXPECT_FALSE(copies_rows_of(ragged, "kernel_")) << ragged;
  const std::string batched = fallback_source("batch_matmul", half_batch_matmul());
  EXPECT_TRUE(copies_rows_of(batched, "A")) << batched;
  EXPECT_FALSE(copies_rows_of(batched, "B")) << batched;
}

// The fallback and random configs of a task, lowered; those the verifier
// refuses for `target` (too many threads or shared bytes) left out.
std::vector<tir::LoweredFunc> configs(const Task& task, int random, const target::Target& target) {
  std::mt19937_64 rng(3);
  std::vector<ConfigEntity> picked = {task.space.fallback()};
  for (int i = 0; i < random; ++i) picked.push_back(task.space.get(static_cast<int64_t>(rng() % task.space.size())));
  std::vector<tir::LoweredFunc> out;
  for (const ConfigEntity& c : picked) {
    tir::LoweredFunc f = tir::lower(task.workload.dag, task.instantiate(c), task.workload.op);
    try {
      tir::verify_gpu(tir::split_device_kernels(f), target.gpu);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("GPU kernel "), std::string::npos) << e.what();
      continue;
    }
    out.push_back(std::move(f));
  }
  EXPECT_GE(out.size(), 2u) << task.name() << ": too few configs fit a block";
  return out;
}

std::vector<Task> tasks_on(const target::Target& target) {
  return {create_task("dense", half_dense(64, 48, 64), target), create_task("batch_matmul", half_batch_matmul(), target),
          create_task("conv2d_nchw_implicit_gemm", half_implicit_gemm(), target)};
}

TEST(TensorCoreTemplates, ConfigsCompileForAmpereAndHopperAndComputeTheReference) {
  const bool opencl = runtime::opencl_unavailable_reason().empty();
  const bool nvrtc = codegen::nvrtc_unavailable_reason().empty();
  const target::Target pocl = target::Target::parse("opencl");
  for (const Task& task : tasks_on(sm90())) {
    ASSERT_NE(task.name().find("_tensorcore.cuda"), std::string::npos) << task.name();
    bool compiled = false;
    for (const tir::LoweredFunc& f : configs(task, 6, sm90())) {
      const codegen::GpuSource source = codegen::emit_gpu_source(f, sm90().gpu, codegen::GpuDialect::Cuda);
      EXPECT_TRUE(codegen::test::kernels_call(source.code, "tsr_tc_mma")) << task.name() << "\n" << source.code;
      if (nvrtc && !compiled)
        for (int arch : {80, 90})
          EXPECT_NE(codegen::compile_cuda(source.code, arch, task.name()).ptx.find("mma.sync.aligned.m16n8k16"),
                    std::string::npos)
              << task.name();
      compiled = true;
      if (opencl)
        EXPECT_LE(codegen::test::run_half_against_reference(task.workload, f, pocl, 5).max_relative_error,
                  measure::kHalfStorageTolerance)
            << task.name();
    }
  }
}

// On a GPU with tensor cores (bench/gpu/device_check.sh).
TEST(TensorCoreTemplates, ConfigsOnCudaTensorCoresComputeTheReference) {
  if (std::string why = runtime::cuda_unavailable_reason(); !why.empty()) GTEST_SKIP() << "cuda: " << why;
  const target::Target cuda = target::Target::parse("cuda");
  if (cuda.gpu.arch < 80) GTEST_SKIP() << "sm_" << cuda.gpu.arch << " has no mma.sync m16n8k16";
  for (const Task& task : tasks_on(cuda))
    for (const tir::LoweredFunc& f : configs(task, 6, cuda))
      EXPECT_LE(codegen::test::run_half_against_reference(task.workload, f, cuda, 5).max_relative_error,
                measure::kHalfStorageTolerance)
          << task.name();
}

}  // namespace
}  // namespace tessera::autotvm
