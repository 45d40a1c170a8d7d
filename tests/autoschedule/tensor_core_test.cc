// The tensor-core sketch (gpu_sketch_rules.h, TensorCoreTiling) and the
// tiles it lowers to (tir::ForKind::TensorCore): which products get it
// (dense, batch_matmul, a convolution as one product in NCHW and NHWC),
// that random candidates lower, pass the GPU verifier for sm_80 / sm_90,
// run on the OpenCL device (PoCL here: every lane computes its warp's tile,
// the loops' meaning) equal to the fp32 reference on the same fp16 inputs,
// and that their CUDA source is written with mma.sync and compiles with
// NVRTC for sm_80 and sm_90. Running it on tensor cores is the device
// check's (bench/gpu/device_check.sh).
#include <gtest/gtest.h>

#include <random>
#include <tuple>

#include "../codegen/gpu_run_util.h"
#include "autoschedule/generate_sketches.h"
#include "autoschedule/gpu_sketch_rules.h"
#include "autoschedule/random_annotation.h"
#include "autoschedule/tensor_core_fallback.h"
#include "codegen/gpu_source.h"
#include "codegen/nvrtc_compiler.h"
#include "features/gpu_features.h"
#include "ir/half_storage.h"
#include "ops/attention.h"
#include "ops/operator.h"
#include "ops/workloads.h"
#include "runtime/cuda_backend.h"
#include "runtime/opencl_device.h"
#include "tessera/error.h"
#include "tir/lower.h"
#include "tir/printer.h"
#include "tir/verify_gpu.h"

namespace tessera::autoschedule {
namespace {

SketchContext cuda(int arch) {
  return SketchContext{target::Target::parse("cuda -arch=sm_" + std::to_string(arch)), 1};
}

ops::Workload dense_bias_relu(int64_t m, int64_t n, int64_t k) {
  return ops::dense_workload({m, k}, {n, k}, ops::Epilogue{.bias = true, .relu = true});
}

// The tensor-core sketches of the product whole, or (`split`) those of its
// partial sums (SplitK).
std::vector<Sketch> tensor_core_sketches(const ir::ComputeDAG& dag, const SketchContext& ctx, bool split = false) {
  std::vector<Sketch> out;
  for (const Sketch& s : generate_sketches(dag, ctx))
    if (is_tensor_core_sketch(s) && is_split_k_sketch(s) == split) out.push_back(s);
  return out;
}

TEST(TensorCoreSketch, HalfMatrixProductsWithSixteenMultiplesGetOneOnAmpereAndLater) {
  const ops::Workload dense = dense_bias_relu(32, 48, 64);
  const ir::ComputeDAG half = ir::with_half_storage(dense.dag);
  const auto sketches = tensor_core_sketches(half, cuda(90));
  ASSERT_EQ(sketches.size(), 1u);
  const std::string text = sketches[0].print();
  // Fused into the bias and relu, which writes the block's shared tiles out.
  EXPECT_NE(text.find("written out by T_relu"), std::string::npos) << text;
  EXPECT_NE(text.find("by the warps of block 0"), std::string::npos) << text;
  EXPECT_EQ(sketches[0].blocks.at(0).threads_per_unit, 32);
  // The tiling without tensor cores is still derived: the search measures both.
  EXPECT_GT(generate_sketches(half, cuda(90)).size(), 1u);
  EXPECT_EQ(tensor_core_sketches(half, cuda(80)).size(), 1u);
  // Not: fp32 operands (tensor cores would round them), sm_75, OpenCL, rows
  // not a multiple of 16, a product that is no matrix product.
  EXPECT_TRUE(tensor_core_sketches(dense.dag, cuda(90)).empty());
  EXPECT_TRUE(tensor_core_sketches(half, cuda(75)).empty());
  EXPECT_TRUE(tensor_core_sketches(half, SketchContext{target::Target::parse("opencl"), 1}).empty());
  EXPECT_TRUE(tensor_core_sketches(ir::with_half_storage(dense_bias_relu(8, 48, 64).dag), cuda(90)).empty());
  const auto conv = ops::conv2d_nchw_workload({1, 16, 8, 8}, {16, 16, 3, 3}, ops::Conv2dAttrs::symmetric(1, 1));
  EXPECT_TRUE(tensor_core_sketches(ir::with_half_storage(conv.dag), cuda(90)).empty());
  // The same convolution as one matrix product has one, whose tiles the
  // epilogue writes out as images.
  const auto gemm = ops::conv2d_nchw_implicit_gemm_workload({1, 16, 8, 8}, {16, 16, 3, 3}, ops::Conv2dAttrs::symmetric(1, 1),
                                                            ops::Epilogue{.bias = true, .relu = true});
  const auto conv_sketches = tensor_core_sketches(ir::with_half_storage(gemm.dag), cuda(90));
  ASSERT_EQ(conv_sketches.size(), 1u);
  EXPECT_NE(conv_sketches[0].print().find("written out by T_relu"), std::string::npos) << conv_sketches[0].print();
}

// The half-stored kernel on the target's device, against the fp32
// reference of the same fp16 inputs.
double error_on_device(const ops::Workload& w, const tir::LoweredFunc& f, const std::string& target) {
  return codegen::test::run_half_against_reference(w, f, target::Target::parse(target), 11).max_relative_error;
}

std::vector<ops::Workload> products() {
  return {
      dense_bias_relu(32, 48, 64),
      ops::dense_workload({64, 32}, {32, 32}),
      ops::batch_matmul_workload({2, 32, 48}, {2, 16, 48}),
      // Convolutions as one product: whole tiles; 24 channels, 27 taps and 49 positions padded to tiles.
      ops::conv2d_nchw_implicit_gemm_workload({1, 16, 8, 8}, {16, 16, 3, 3}, ops::Conv2dAttrs::symmetric(1, 1),
                                              ops::Epilogue{.bias = true, .relu = true}),
      ops::conv2d_nchw_implicit_gemm_workload({1, 3, 7, 7}, {24, 3, 3, 3}, ops::Conv2dAttrs::symmetric(1, 1)),
      // Two images: their positions fused into the product's 98 (of 112) columns.
      ops::conv2d_nchw_implicit_gemm_workload({2, 8, 7, 7}, {16, 8, 3, 3}, ops::Conv2dAttrs::symmetric(1, 1),
                                              ops::Epilogue{.bias = true, .relu = true}),
      // In NHWC (positions x channels): whole tiles; two images of 49
      // positions (the product's rows ragged); 3 channels, 27 taps, 24
      // output channels padded to tiles.
      ops::conv2d_nhwc_implicit_gemm_workload({1, 8, 8, 16}, {3, 3, 16, 16}, ops::Conv2dAttrs::symmetric(1, 1),
                                              ops::Epilogue{.bias = true, .relu = true}),
      ops::conv2d_nhwc_implicit_gemm_workload({2, 7, 7, 8}, {3, 3, 8, 16}, ops::Conv2dAttrs::symmetric(1, 1),
                                              ops::Epilogue{.bias = true, .relu = true}),
      ops::conv2d_nhwc_implicit_gemm_workload({1, 7, 7, 3}, {3, 3, 3, 24}, ops::Conv2dAttrs::symmetric(1, 1)),
  };
}

// Up to `count` random candidates of the workload's tensor-core sketch (of
// `dag`: in half, or in fp32 on a -tf32 target) that fit a block of the
// target, lowered.
// (`split`: of each split-K tensor-core sketch, which there must be.)
std::vector<tir::LoweredFunc> candidates(const ops::Workload& w, const ir::ComputeDAG& dag, const SketchContext& ctx,
                                         int count, std::mt19937_64& rng, bool split = false) {
  const auto sketches = tensor_core_sketches(dag, ctx, split);
  if (split) EXPECT_FALSE(sketches.empty()) << w.op;
  else EXPECT_EQ(sketches.size(), 1u) << w.op;
  std::vector<tir::LoweredFunc> out;
  for (int k = 0; k < 4 * count * static_cast<int>(sketches.size()) && static_cast<int>(out.size()) < count; ++k) {
    const Sketch& sketch = sketches[static_cast<size_t>(k) % sketches.size()];
    const schedule::Trace trace = instantiate(sketch, random_params(sketch, ctx, rng));
    tir::LoweredFunc f = tir::lower(dag, trace, w.op);
    try {
      tir::verify_gpu(tir::split_device_kernels(f), ctx.target.gpu);
    } catch (const Error&) {
      continue;  // too many threads or shared bytes for one block: refused in one line, as any candidate
    }
    out.push_back(std::move(f));
  }
  EXPECT_FALSE(out.empty()) << w.op << ": no candidate fit a block";
  return out;
}

TEST(TensorCoreSketch, RandomCandidatesMatchTheReferenceAndCompileForAmpereAndHopper) {
  const bool opencl = runtime::opencl_unavailable_reason().empty();
  const bool nvrtc = codegen::nvrtc_unavailable_reason().empty();
  if (!opencl && !nvrtc) GTEST_SKIP() << "neither an OpenCL device nor NVRTC here";
  const SketchContext ctx = cuda(90);
  std::mt19937_64 rng(5);
  int vector_fetches = 0, ldmatrix_loads = 0, pipelined = 0;
  for (const ops::Workload& w : products()) {
    const ir::ComputeDAG half = ir::with_half_storage(w.dag);
    for (const tir::LoweredFunc& f : candidates(w, half, ctx, 3, rng)) {
      // The cost model sees the tiles as tensor-core products; one kernel
      // (a convolution's product never goes through device memory).
      EXPECT_GT(features::gpu_features(f)[11], 0.0f);
      EXPECT_EQ(tir::split_device_kernels(f).kernels.size(), 1u) << w.op;
      const codegen::GpuSource cuda_source = codegen::emit_gpu_source(f, ctx.target.gpu, codegen::GpuDialect::Cuda);
      EXPECT_TRUE(codegen::test::kernels_call(cuda_source.code, "tsr_tc_mma")) << cuda_source.code;
      EXPECT_TRUE(codegen::test::kernels_call(cuda_source.code, "tsr_tc_fill(")) << cuda_source.code;
      EXPECT_TRUE(codegen::test::kernels_call(cuda_source.code, "tsr_tc_store(")) << cuda_source.code;
      // A fetch of 8 halves a lane (where it drew them and they are aligned):
      // one 16-byte copy; on PoCL the same lanes as vload_half8.
      vector_fetches += cuda_source.code.find("*(uint4*)(") != std::string::npos;
      // Operand tiles in shared memory, 16-byte rows: one ldmatrix each.
      const bool ldmatrix = codegen::test::kernels_call(cuda_source.code, "tsr_ldmatrix_");
      ldmatrix_loads += ldmatrix;
      // Where it drew a pipelined step, a staged fetch loads the next step
      // between the barriers (tir/pipeline_fetches.h).
      if (features::gpu_features(f)[12] > 0) {
        const std::string loops = tir::to_string(tir::prepare_for_gpu_codegen(f));
        pipelined += loops.find(" + 1) < ") != std::string::npos && loops.find(".staged[") != std::string::npos;
      }
      if (nvrtc)
        for (int arch : {80, 90}) {
          const codegen::CudaBinary binary = codegen::compile_cuda(cuda_source.code, arch, w.op);
          EXPECT_NE(binary.ptx.find("mma.sync.aligned.m16n8k16"), std::string::npos) << binary.log;
          if (ldmatrix) EXPECT_NE(binary.ptx.find("ldmatrix.sync.aligned.m8n8.x4"), std::string::npos) << binary.log;
        }
      if (opencl) EXPECT_LE(error_on_device(w, f, "opencl"), 2e-3) << w.op << "\n" << cuda_source.code;
    }
  }
  EXPECT_GT(vector_fetches, 0) << "no candidate fetched 8 halves a lane";
  EXPECT_GT(ldmatrix_loads, 0) << "no candidate loaded its operands with ldmatrix";
  EXPECT_GT(pipelined, 0) << "no candidate loaded a step ahead";
}

// Products of long reductions and few outputs (split_k_ranges), whose
// partial sums the split-K sketches tile for tensor cores, their ranges a
// batch: the tiles compile with mma.sync and, on PoCL, the partial sums
// added equal the reference.
std::vector<ops::Workload> long_products() {
  return {
      dense_bias_relu(32, 48, 1024),  // 8 ranges of 128, or 2 of 512
      // 64 channels x 9 taps: 4 ranges of 144.
      ops::conv2d_nchw_implicit_gemm_workload({1, 64, 4, 4}, {32, 64, 3, 3}, ops::Conv2dAttrs::symmetric(1, 1),
                                              ops::Epilogue{.bias = true, .relu = true}),
      ops::conv2d_nhwc_implicit_gemm_workload({1, 4, 4, 64}, {3, 3, 64, 32}, ops::Conv2dAttrs::symmetric(1, 1),
                                              ops::Epilogue{.bias = true, .relu = true}),
  };
}

TEST(TensorCoreSketch, SplitKCandidatesMatchTheReferenceAndCompileForHopper) {
  const bool opencl = runtime::opencl_unavailable_reason().empty();
  const bool nvrtc = codegen::nvrtc_unavailable_reason().empty();
  if (!opencl && !nvrtc) GTEST_SKIP() << "neither an OpenCL device nor NVRTC here";
  const SketchContext ctx = cuda(90);
  std::mt19937_64 rng(13);
  for (const ops::Workload& w : long_products()) {
    const ir::ComputeDAG half = ir::with_half_storage(w.dag);
    for (const tir::LoweredFunc& f : candidates(w, half, ctx, 3, rng, /*split=*/true)) {
      // The partial sums' tiles on tensor cores, then a kernel adding them.
      const auto kernels = tir::split_device_kernels(f).kernels;
      EXPECT_GE(kernels.size(), 2u) << w.op;
      const codegen::GpuSource cuda_source = codegen::emit_gpu_source(f, ctx.target.gpu, codegen::GpuDialect::Cuda);
      EXPECT_TRUE(codegen::test::kernels_call(cuda_source.code, "tsr_tc_mma")) << cuda_source.code;
      if (nvrtc) {
        const codegen::CudaBinary binary = codegen::compile_cuda(cuda_source.code, 90, w.op);
        EXPECT_NE(binary.ptx.find("mma.sync.aligned.m16n8k16"), std::string::npos) << binary.log;
      }
      if (opencl) EXPECT_LE(error_on_device(w, f, "opencl"), 2e-3) << w.op << "\n" << cuda_source.code;
    }
  }
}

// TF32 (a target's "-tf32"): fp32 products get the tensor-core sketch too,
// their operands staged in fp32; the tiles are written with mma.sync
// m16n8k8 in TF32 and compile for sm_80 and sm_90; on PoCL (fp32 loops)
// they equal the reference. Without -tf32 fp32 products get none.
TEST(TensorCoreSketch, Fp32ProductsTakeTf32TensorCoresWhereTheTargetAllowsThem) {
  const SketchContext tf32{target::Target::parse("cuda -arch=sm_90 -tf32"), 1};
  const ops::Workload dense = dense_bias_relu(32, 48, 64);
  EXPECT_TRUE(tensor_core_sketches(dense.dag, cuda(90)).empty());
  const auto sketches = tensor_core_sketches(dense.dag, tf32);
  ASSERT_EQ(sketches.size(), 1u);
  const std::string text = sketches[0].print();
  EXPECT_EQ(text.find("float16"), std::string::npos) << text;
  const bool opencl = runtime::opencl_unavailable_reason().empty();
  const bool nvrtc = codegen::nvrtc_unavailable_reason().empty();
  if (!opencl && !nvrtc) GTEST_SKIP() << "neither an OpenCL device nor NVRTC here";
  std::mt19937_64 rng(17);
  for (const ops::Workload& w : products()) {
    for (const tir::LoweredFunc& f : candidates(w, w.dag, tf32, 2, rng)) {
      const codegen::GpuSource source = codegen::emit_gpu_source(f, tf32.target.gpu, codegen::GpuDialect::Cuda);
      EXPECT_TRUE(codegen::test::kernels_call(source.code, "tsr_tc_mma(")) << source.code;  // TF32: fp32 operands
      if (nvrtc)
        for (int arch : {80, 90}) {
          const codegen::CudaBinary binary = codegen::compile_cuda(source.code, arch, w.op);
          EXPECT_NE(binary.ptx.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"), std::string::npos)
              << binary.log;
          EXPECT_EQ(binary.ptx.find("m16n8k16"), std::string::npos) << w.op << ": no fp16 products in TF32";
        }
      if (opencl)
        EXPECT_LE(codegen::test::run_against_reference(w, f, target::Target::parse("opencl"), 11).max_relative_error,
                  1e-5)
            << w.op;
    }
  }
}

// A ResNet layer at batch 1: the shared tiles of a block are its own
// (the positions fused in the writer index the product's columns in order,
// its batch of one indexed 0), so candidates fit a block's shared memory.
TEST(TensorCoreSketch, ABatchOneResnetLayerHasCandidatesThatFitABlock) {
  const auto conv = ops::conv2d_nchw_implicit_gemm_workload({1, 64, 56, 56}, {64, 64, 3, 3}, ops::Conv2dAttrs::symmetric(1, 1),
                                                            ops::Epilogue{.bias = true, .relu = true});
  std::mt19937_64 rng(9);
  for (const tir::LoweredFunc& f : candidates(conv, ir::with_half_storage(conv.dag), cuda(90), 3, rng))
    EXPECT_LE(tir::split_device_kernels(f).kernels.at(0).shared_bytes, 48 * 1024);
}

// The untuned tensor-core kernel of an NHWC convolution
// (autoschedule/tensor_core_fallback.h) in half on sm_90; `pipelined`: its
// step's fetches loaded a step ahead (tir/pipeline_fetches.h).
std::string nhwc_fallback_source(const ops::Workload& w, codegen::GpuDialect dialect, tir::LoweredFunc* lowered,
                                 bool pipelined = false) {
  const ir::ComputeDAG half = ir::with_half_storage(w.dag);
  std::optional<TensorCoreFallback> f = tensor_core_fallback(half, cuda(90).target);
  if (!f) throw Error(w.op + ": no tensor-core fallback");
  if (pipelined) f->params.pipeline.assign(f->params.pipeline.size(), 1);
  *lowered = tir::lower(half, instantiate(f->sketch, f->params), w.op);
  return codegen::emit_gpu_source(*lowered, cuda(90).target.gpu, dialect).code;
}

// In NHWC a step's 8 consecutive k of the window are 8 channels of one
// pixel: each lane copies them as one 16-byte load under the padding check
// (zero off the image), where in NCHW it gathers the window element by
// element; with 3 channels (a network's first layer) the 8 k span taps,
// and the lanes copy elements. All compile for sm_80 and sm_90 with
// ldmatrix and equal the reference on PoCL (vload_half8 under the check).
TEST(TensorCoreSketch, TheFallbackFetchesAnNhwcWindowSixteenBytesALaneUnderItsPaddingCheck) {
  const ops::Epilogue bias_relu{.bias = true, .relu = true};
  const ops::Workload nhwc = ops::conv2d_nhwc_implicit_gemm_workload({2, 8, 8, 64}, {3, 3, 64, 64},
                                                                     ops::Conv2dAttrs::symmetric(1, 1), bias_relu);
  const ops::Workload nchw = ops::conv2d_nchw_implicit_gemm_workload({2, 64, 8, 8}, {64, 64, 3, 3},
                                                                     ops::Conv2dAttrs::symmetric(1, 1), bias_relu);
  const ops::Workload first = ops::conv2d_nhwc_implicit_gemm_workload({1, 16, 16, 3}, {3, 3, 3, 32},
                                                                      ops::Conv2dAttrs::symmetric(1, 1), bias_relu);
  tir::LoweredFunc f_nhwc, f_nchw, f_first;
  const std::string cuda_nhwc = nhwc_fallback_source(nhwc, codegen::GpuDialect::Cuda, &f_nhwc);
  EXPECT_NE(cuda_nhwc.find(" ? *(const uint4*)(data + "), std::string::npos) << cuda_nhwc;
  EXPECT_NE(cuda_nhwc.find(") : uint4{};"), std::string::npos) << cuda_nhwc;
  EXPECT_EQ(cuda_nhwc.find(" ? data["), std::string::npos) << cuda_nhwc;
  EXPECT_NE(cuda_nhwc.find("= *(const uint4*)(kernel_ + "), std::string::npos) << cuda_nhwc;
  const std::string opencl_nhwc = nhwc_fallback_source(nhwc, codegen::GpuDialect::OpenCl, &f_nhwc);
  EXPECT_NE(opencl_nhwc.find(" ? vload_half8(0, data + "), std::string::npos) << opencl_nhwc;
  EXPECT_NE(opencl_nhwc.find(") : (float8)(0.0f), 0, "), std::string::npos) << opencl_nhwc;
  const std::string cuda_nchw = nhwc_fallback_source(nchw, codegen::GpuDialect::Cuda, &f_nchw);
  EXPECT_NE(cuda_nchw.find(" ? data["), std::string::npos) << cuda_nchw;
  EXPECT_EQ(cuda_nchw.find("uint4*)(data + "), std::string::npos) << cuda_nchw;
  const std::string cuda_first = nhwc_fallback_source(first, codegen::GpuDialect::Cuda, &f_first);
  EXPECT_EQ(cuda_first.find("uint4*)(data + "), std::string::npos) << cuda_first;
  EXPECT_NE(cuda_first.find(" ? data["), std::string::npos) << cuda_first;
  // Pipelined, the next step's window vectors are loaded into registers
  // under their check while this step multiplies.
  tir::LoweredFunc f_pipelined;
  const std::string cuda_pipelined = nhwc_fallback_source(nhwc, codegen::GpuDialect::Cuda, &f_pipelined, true);
  EXPECT_NE(cuda_pipelined.find("if (rk_0_0 + 1 < "), std::string::npos) << cuda_pipelined;
  EXPECT_NE(cuda_pipelined.find("(conv_columns_cache_staged + "), std::string::npos) << cuda_pipelined;
  EXPECT_NE(cuda_pipelined.find(" ? *(const uint4*)(data + "), std::string::npos) << cuda_pipelined;

  const bool opencl = runtime::opencl_unavailable_reason().empty();
  const bool nvrtc = codegen::nvrtc_unavailable_reason().empty();
  if (!opencl && !nvrtc) GTEST_SKIP() << "neither an OpenCL device nor NVRTC here";
  for (const auto& [w, f, source] : {std::tuple{&nhwc, &f_nhwc, &cuda_nhwc}, std::tuple{&first, &f_first, &cuda_first},
                                     std::tuple{&nhwc, &f_pipelined, &cuda_pipelined}}) {
    if (nvrtc)
      for (int arch : {80, 90}) {
        const codegen::CudaBinary binary = codegen::compile_cuda(*source, arch, w->op);
        EXPECT_NE(binary.ptx.find("ldmatrix.sync.aligned.m8n8.x4"), std::string::npos) << binary.log;
        EXPECT_NE(binary.ptx.find("mma.sync.aligned.m16n8k16"), std::string::npos) << binary.log;
      }
    if (opencl) EXPECT_LE(error_on_device(*w, *f, "opencl"), 2e-3) << w->op;
  }
}

// Attention in half (BERT-base's heads: 12 of 128 x 64, 128 keys, a
// padding mask) has a tensor-core sketch for its scores, whose other stages'
// tiles the fallback's numbers, a product's, do not cover (it threw
// "tile 0 (T_attention_combined b, extent 12) needs 3 lengths": every
// untuned half BERT-base on CUDA). Untuned it keeps its own schedule
// (schedule::gpu_attention_schedule), which builds for sm_90.
TEST(TensorCoreSketch, AttentionInHalfKeepsItsOwnUntunedSchedule) {
  const ops::Operator& op = ops::find_operator("attention");
  const ops::Attrs attrs = ops::AttentionAttrs{0.125, 12, true};
  const std::vector<ops::Shape> shapes = {{12, 128, 64}, {12, 128, 64}, {12, 128, 64}, {1, 1, 1, 128}};
  std::vector<ir::Tensor> in;
  for (size_t i = 0; i < shapes.size(); ++i) in.push_back(ir::placeholder(shapes[i], "x" + std::to_string(i)));
  const ir::ComputeDAG half = ir::with_half_storage(ir::ComputeDAG({op.compute({attrs, shapes, shapes[0], {}}, in)}));
  const target::Target sm90 = cuda(90).target;
  EXPECT_FALSE(tensor_core_sketches(half, cuda(90)).empty());
  EXPECT_FALSE(tensor_core_fallback(half, sm90).has_value());
  const schedule::Trace untuned = untuned_schedule(half, sm90);
  EXPECT_EQ(untuned.to_json(), schedule::gpu_attention_schedule(half, sm90.gpu.max_threads_per_block)->to_json());
  EXPECT_NO_THROW(
      codegen::emit_gpu_source(tir::lower(half, untuned, "attention"), sm90.gpu, codegen::GpuDialect::Cuda));
  // In fp32 on a -tf32 target likewise.
  const ir::ComputeDAG fp32 = ir::with_float32_storage(half);
  const target::Target tf32 = target::Target::parse("cuda -arch=sm_90 -tf32");
  EXPECT_FALSE(tensor_core_fallback(fp32, tf32).has_value());
  EXPECT_NO_THROW(tir::lower(fp32, untuned_schedule(fp32, tf32), "attention"));
}

// On the GPU (bench/gpu/device_check.sh): the same candidates on tensor cores.
TEST(TensorCoreSketch, CandidatesOnCudaTensorCoresMatchTheReference) {
  if (std::string why = runtime::cuda_unavailable_reason(); !why.empty()) GTEST_SKIP() << "cuda: " << why;
  const SketchContext ctx{target::Target::parse("cuda"), 1};
  if (ctx.target.gpu.arch < 80) GTEST_SKIP() << "sm_" << ctx.target.gpu.arch << " has no mma.sync m16n8k16";
  std::mt19937_64 rng(5);
  for (const ops::Workload& w : products()) {
    const ir::ComputeDAG half = ir::with_half_storage(w.dag);
    for (const tir::LoweredFunc& f : candidates(w, half, ctx, 3, rng))
      EXPECT_LE(error_on_device(w, f, "cuda"), 2e-3) << w.op;
  }
  for (const ops::Workload& w : long_products()) {
    const ir::ComputeDAG half = ir::with_half_storage(w.dag);
    for (const tir::LoweredFunc& f : candidates(w, half, ctx, 3, rng, /*split=*/true))
      EXPECT_LE(error_on_device(w, f, "cuda"), 2e-3) << w.op << " split-K";
  }
  // TF32: fp32 inputs, each operand rounded to a 10-bit mantissa (2^-11
  // relative), the products summed in fp32.
  const SketchContext tf32{target::Target::parse(ctx.target.str() + " -tf32"), 1};
  for (const ops::Workload& w : products())
    for (const tir::LoweredFunc& f : candidates(w, w.dag, tf32, 2, rng))
      EXPECT_LE(codegen::test::run_against_reference(w, f, tf32.target, 11).max_relative_error, 3e-3)
          << w.op << " TF32";
}

// The code generator writes a tensor-core loop only when it is one of the
// three tiles, and the verifier keeps the lanes of a warp together.
TEST(TensorCoreTile, LoopsThatAreNoTileAndTilesLanesWouldSplitAreRefused) {
  const ops::Workload w = ops::dense_workload({32, 32}, {512, 32});
  const ir::ComputeDAG half = ir::with_half_storage(w.dag);
  // A tensor_core mark on a plain product's rows, its columns the lanes.
  const schedule::Trace plain = schedule::Trace()
                                    .split("T_dense", "i", {16})
                                    .split("T_dense", "j", {32})
                                    .reorder("T_dense", {"i.0", "j.0", "i.1", "j.1", "k"})
                                    .bind("T_dense", "i.0", schedule::Annotation::BlockX)
                                    .bind("T_dense", "j.1", schedule::Annotation::ThreadX)
                                    .annotate("T_dense", "i.1", schedule::Annotation::TensorCore);
  const tir::LoweredFunc f = tir::lower(half, plain, w.op);
  try {
    codegen::emit_gpu_source(f, cuda(90).target.gpu, codegen::GpuDialect::Cuda);
    ADD_FAILURE() << "written";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor-core loop 'i.1'"), std::string::npos) << e.what();
  }
  // Inside a threadIdx.x loop, each lane would compute a different tile.
  const schedule::Trace in_lanes = schedule::Trace()
                                       .split("T_dense", "i", {16})
                                       .split("T_dense", "j", {32, 16})
                                       .reorder("T_dense", {"i.0", "j.0", "j.1", "i.1", "j.2", "k"})
                                       .bind("T_dense", "i.0", schedule::Annotation::BlockX)
                                       .bind("T_dense", "j.1", schedule::Annotation::ThreadX)
                                       .annotate("T_dense", "i.1", schedule::Annotation::TensorCore);
  try {
    tir::verify_gpu(tir::split_device_kernels(tir::lower(half, in_lanes, w.op)), cuda(90).target.gpu);
    ADD_FAILURE() << "verified";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("inside a threadIdx.x loop"), std::string::npos) << e.what();
  }
  // A reduce loop cannot be marked.
  EXPECT_THROW(tir::lower(half, schedule::Trace().annotate("T_dense", "k", schedule::Annotation::TensorCore), w.op),
               Error);
  EXPECT_EQ(schedule::annotation_from_string("tensor_core"), schedule::Annotation::TensorCore);
}

}  // namespace
}  // namespace tessera::autoschedule
