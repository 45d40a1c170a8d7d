// The GPU path without a GPU: hand-written GPU schedules lowered (bindings,
// shared memory, barriers), checked by the GPU verifier, written as CUDA C
// and OpenCL C; the OpenCL kernels run on the OpenCL device (PoCL's CPU
// device in CI) against each operator's reference.
#include "codegen/gpu_source.h"

#include <gtest/gtest.h>

#include <map>

#include "../ops/ops_test_util.h"
#include "gpu_run_util.h"
#include "codegen/lane_analysis.h"
#include "codegen/nvrtc_compiler.h"
#include "ir/half_storage.h"
#include "measure/gpu_function.h"
#include "ops/attention.h"
#include "ops/layer_norm.h"
#include "ops/operator.h"
#include "ops/registry.h"
#include "runtime/cuda_backend.h"
#include "runtime/opencl_device.h"
#include "schedule/default_schedule.h"
#include "schedule/gpu_schedule.h"
#include "tessera/error.h"
#include "tir/lower.h"

namespace tessera::codegen {
namespace {


ops::OpArgs matmul_args(ops::Shape a, ops::Shape b, bool epilogue) {
  ops::OpArgs args;
  args.input = std::move(a);
  args.weight = std::move(b);
  args.bias = args.relu = epilogue;
  return args;
}

tir::LoweredFunc lowered(const ops::Workload& w, const schedule::Trace& t) {
  return tir::lower(w.dag, t, w.op);
}

std::string expect_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(GpuSource, MatmulScheduleStagesBothOperandsInSharedMemoryBetweenBarriers) {
  const ops::Workload w = ops::make_workload("dense", matmul_args({128, 72}, {96, 72}, true));
  const tir::LoweredFunc f = lowered(w, *schedule::gpu_matmul_schedule(w.dag, 1024));
  const GpuSource cuda = emit_gpu_source(f, {}, GpuDialect::Cuda);
  ASSERT_EQ(cuda.program.kernels.size(), 1u) << cuda.code;
  const tir::DeviceKernel& k = cuda.program.kernels[0];
  EXPECT_EQ(k.grid, (std::array<int64_t, 3>{2, 2, 1}));  // 96 columns: two tiles of 64, the second guarded
  EXPECT_EQ(k.block, (std::array<int64_t, 3>{16, 16, 1}));
  EXPECT_EQ(k.shared_bytes, 2 * 64 * 8 * 4);
  // Both slices fetched four floats a load (K = 72 and the step of 8 are multiples of 4).
  for (const char* piece :
       {"extern \"C\" __global__ void __launch_bounds__(256)", "__shared__ __align__(16) float data_cache[512];",
        "blockIdx.y", "threadIdx.x", "__syncthreads();", "*(float4*)(data_cache + ", "= *(const float4*)(data + ",
        "*(float4*)(weight_cache + "})
    EXPECT_NE(cuda.code.find(piece), std::string::npos) << piece << "\n" << cuda.code;
  const GpuSource ocl = emit_gpu_source(f, {}, GpuDialect::OpenCl);
  for (const char* piece : {"__kernel __attribute__((reqd_work_group_size(16, 16, 1)))", "__global float* restrict",
                            "__local float data_cache[512] __attribute__((aligned(16)));", "get_local_id(1)",
                            "barrier(CLK_LOCAL_MEM_FENCE);", "vstore4(vload4(0, data + "})
    EXPECT_NE(ocl.code.find(piece), std::string::npos) << piece << "\n" << ocl.code;
  // K = 37: no row of the operand starts aligned, so every float is fetched alone.
  const ops::Workload ragged = ops::make_workload("dense", matmul_args({100, 37}, {70, 37}, false));
  const GpuSource scalar =
      emit_gpu_source(lowered(ragged, *schedule::gpu_matmul_schedule(ragged.dag, 1024)), {}, GpuDialect::Cuda);
  EXPECT_EQ(scalar.code.find("float4"), std::string::npos) << scalar.code;
}

// A vectorized copy loop becomes one vector load and store only where both
// offsets are contiguous in the lane and start at a multiple of the lanes.
TEST(GpuSource, VectorCopiesNeedContiguousAlignedOffsetsOnBothSides) {
  ir::Tensor a = ir::placeholder({64, 8}, "a"), b = ir::placeholder({64, 8}, "b");
  ir::Var tx("tx"), v("v");
  auto copy = [&](const ir::Expr& row_offset, const ir::Expr& column, int64_t lanes) {
    tir::Stmt body = tir::make_for(
        tx, 64, tir::ForKind::ThreadX,
        tir::make_for(v, lanes, tir::ForKind::Vectorized,
                      tir::make_store(b, {tx, ir::Expr(int64_t{4}) + v}, ir::load(a, {tx, row_offset + column}))));
    return emit_gpu_source(tir::LoweredFunc{"copy", {a, b}, body}, {}, GpuDialect::Cuda).code;
  };
  EXPECT_NE(copy(ir::Expr(int64_t{0}), v, 4).find("*(float4*)(b + tx*8 + 4) = *(const float4*)(a + tx*8);"),
            std::string::npos)
      << copy(ir::Expr(int64_t{0}), v, 4);
  EXPECT_NE(copy(ir::Expr(int64_t{2}), v, 2).find("*(float2*)"), std::string::npos);
  EXPECT_EQ(copy(ir::Expr(int64_t{2}), v, 4).find("float4"), std::string::npos);      // a + 2: not 16-byte aligned
  EXPECT_EQ(copy(ir::Expr(int64_t{0}), v * 2, 4).find("float4"), std::string::npos);  // every other float
  EXPECT_EQ(copy(ir::Expr(int64_t{0}), v, 3).find("float3"), std::string::npos);      // no 3-lane vectors
}

// Bounds conjunctions (padding's) are one predicate, & not &&: with && ptxas
// branched around each padded load and awaited it there. A side that reads
// memory keeps C's order of evaluation.
TEST(GpuSource, ConditionsOnIndicesAloneEvaluateBothSides) {
  ir::Tensor a = ir::placeholder({64}, "a"), b = ir::placeholder({64}, "b");
  ir::Var tx("tx");
  auto source = [&](const ir::Expr& cond, GpuDialect dialect) {
    tir::Stmt body = tir::make_for(
        tx, 64, tir::ForKind::ThreadX,
        tir::make_store(b, {tx}, ir::select(cond, ir::load(a, {tx}), ir::make_float(0.0))));
    const std::string code = emit_gpu_source(tir::LoweredFunc{"guard", {a, b}, body}, {}, dialect).code;
    return code.substr(code.find(dialect == GpuDialect::Cuda ? "__global__" : "__kernel"));  // past the prelude
  };
  const ir::Expr x(tx), one(int64_t{1}), last(int64_t{63});
  for (GpuDialect dialect : {GpuDialect::Cuda, GpuDialect::OpenCl}) {
    const std::string inside = source(x >= one && x < last, dialect);
    EXPECT_NE(inside.find("tx >= 1 & tx < 63 ? "), std::string::npos) << inside;
    const std::string outside = source(x < one || x >= last || x == ir::Expr(int64_t{5}), dialect);
    EXPECT_NE(outside.find("tx < 1 | tx >= 63 | tx == 5 ? "), std::string::npos) << outside;
    EXPECT_NE(source(ir::logical_not(x >= one && x < last), dialect).find("!(tx >= 1 & tx < 63)"), std::string::npos);
  }
  // A read on either side: && as written (the read may depend on the other side).
  EXPECT_NE(source(x < last && ir::load(a, {x + one}) > ir::make_float(0.0), GpuDialect::Cuda)
                .find("tx < 63 && a[tx + 1] > 0.0f"),
            std::string::npos);
  EXPECT_NE(source(ir::load(a, {x + one}) > ir::make_float(0.0) || x < one, GpuDialect::Cuda)
                .find("a[tx + 1] > 0.0f || tx < 1"),
            std::string::npos);
  // The read the value repeats (a[tx], also the select's choice) is read
  // once, before (codegen/repeated_reads.h): the condition is then on
  // values alone, one predicate.
  const std::string repeated = source(ir::load(a, {x}) > ir::make_float(0.0) || x < one, GpuDialect::Cuda);
  EXPECT_NE(repeated.find("const float tsr_x0 = a[tx];"), std::string::npos) << repeated;
  EXPECT_NE(repeated.find("tsr_x0 > 0.0f | tx < 1 ? tsr_x0 : 0.0f"), std::string::npos) << repeated;
  // Mixed: the index-only side is one predicate inside the short-circuit.
  EXPECT_NE(source((x >= one && x < last) && ir::load(a, {x - one}) > ir::make_float(0.0), GpuDialect::Cuda)
                .find("tx >= 1 & tx < 63 && a[tx - 1] > 0.0f"),
            std::string::npos);
}

// A clip (relu6) of a sum of reads, as a fused epilogue writes it, repeats
// its operand three times; the store reads it once, into a variable, and
// selects among values (ptxas had branched around the repeated reads).
// On PoCL: clip's values, NaN kept, in fp32 and through half storage.
TEST(GpuSource, EpiloguesReadTheirRepeatedOperandOnce) {
  const int64_t n = 64;
  auto kernel = [&](ir::DType storage) {
    ir::Tensor a = ir::placeholder({n}, "a", storage), b = ir::placeholder({n}, "b", storage),
               out = ir::placeholder({n}, "out", storage);
    ir::Var tx("tx");
    const ir::Expr x = ir::load(a, {tx}) + ir::load(b, {tx}), zero = ir::make_float(0.0), six = ir::make_float(6.0);
    const ir::Expr relu6 = ir::select(x < zero, zero, ir::select(x > six, six, x));
    return tir::LoweredFunc{"relu6", {a, b, out},
                            tir::make_for(tx, n, tir::ForKind::ThreadX, tir::make_store(out, {tx}, relu6))};
  };
  for (GpuDialect dialect : {GpuDialect::Cuda, GpuDialect::OpenCl})
    for (ir::DType storage : {ir::DType::Float32, ir::DType::Float16}) {
      std::string code = emit_gpu_source(kernel(storage), {}, dialect).code;
      code = code.substr(code.find(dialect == GpuDialect::Cuda ? "__global__" : "__kernel"));  // past the prelude
      const bool cuda_half = dialect == GpuDialect::Cuda && storage == ir::DType::Float16;
      const bool plain = dialect == GpuDialect::Cuda || storage == ir::DType::Float32;
      const std::string read = cuda_half ? "tsr_h2f(a[tx])" : plain ? "a[tx]" : "vload_half(tx, a)";
      EXPECT_NE(code.find("const float tsr_x0 = " + read + " + "), std::string::npos) << code;
      EXPECT_EQ(code.find(read), code.rfind(read)) << "a read twice\n" << code;
      EXPECT_NE(code.find("tsr_x0 < 0.0f ? 0.0f : tsr_x0 > 6.0f ? 6.0f : tsr_x0"), std::string::npos) << code;
    }
  if (!runtime::opencl_unavailable_reason().empty()) GTEST_SKIP() << runtime::opencl_unavailable_reason();
  std::vector<float> a(n), b(n, 0.5f);
  for (int64_t i = 0; i < n; ++i) a[i] = static_cast<float>(i - 16) * 0.25f;  // -4 .. 11.75
  a[3] = std::nanf("");
  for (ir::DType storage : {ir::DType::Float32, ir::DType::Float16}) {
    std::vector<float> out(n, -7.0f);
    measure::GpuFunction(kernel(storage), target::Target::parse("opencl")).run({a.data(), b.data(), out.data()});
    for (int64_t i = 0; i < n; ++i) {
      const float x = a[i] + b[i];
      if (std::isnan(x))
        EXPECT_TRUE(std::isnan(out[i])) << i;
      else
        EXPECT_EQ(out[i], x < 0 ? 0.0f : x > 6 ? 6.0f : x) << i;  // quarters are exact in half too
    }
  }
}

// A fetch's bound on whole vectors (the fused index below an extent the
// lanes divide) holds for all lanes or none: the vector move goes under the
// first lane's check. Bounds that split a vector keep the lanes scalar.
TEST(GpuSource, VectorCopiesGoUnderBoundsThatHoldForWholeVectors) {
  ir::Tensor a = ir::placeholder({64, 8}, "a"), b = ir::placeholder({64, 8}, "b");
  ir::Var tx("tx"), v("v");
  auto copy = [&](const ir::Expr& bound) {
    const ir::Expr x(tx), lane(v);
    tir::Stmt body = tir::make_for(
        tx, 64, tir::ForKind::ThreadX,
        tir::make_for(v, 4, tir::ForKind::Vectorized,
                      tir::make_if(x * 8 + lane < bound, tir::make_store(b, {tx, lane}, ir::load(a, {tx, lane})))));
    return emit_gpu_source(tir::LoweredFunc{"copy", {a, b}, body}, {}, GpuDialect::Cuda).code;
  };
  const std::string whole = copy(ir::Expr(int64_t{400}));
  EXPECT_NE(whole.find("if (tx*8 < 400)\n"), std::string::npos) << whole;
  EXPECT_NE(whole.find("*(float4*)(b + tx*8) = *(const float4*)(a + tx*8);"), std::string::npos) << whole;
  EXPECT_EQ(copy(ir::Expr(int64_t{398})).find("float4"), std::string::npos);  // 398: the last vector splits
  ir::Var other("other");
  EXPECT_TRUE(lane_uniform(ir::Expr(tx) * 8 + ir::Expr(v) <= ir::Expr(int64_t{399}), v, 4));  // <= 399 is < 400
  EXPECT_FALSE(lane_uniform(ir::Expr(v) < ir::Expr(int64_t{2}), v, 4));
  EXPECT_FALSE(lane_uniform(ir::Expr(tx) * 8 + ir::Expr(v) * 2 < ir::Expr(int64_t{400}), v, 4));
  EXPECT_TRUE(lane_uniform(ir::Expr(other) < ir::Expr(int64_t{3}), v, 4));
  EXPECT_TRUE(lane_uniform(
      ir::Expr(tx) * 4 + ir::Expr(v) >= ir::Expr(int64_t{8}) && ir::Expr(other) < ir::Expr(int64_t{3}), v, 4));
  EXPECT_FALSE(lane_uniform(ir::Expr(tx) + ir::Expr(v) >= ir::Expr(int64_t{8}), v, 4));  // tx: any integer
}

TEST(GpuSource, KnownAlignmentReadsConstantsThroughSumsProductsAndModulo) {
  ir::Var i("i"), j("j");
  EXPECT_EQ(known_alignment(ir::Expr(int64_t{12})), 4);
  EXPECT_EQ(known_alignment(ir::Expr(int64_t{0})), 64);
  EXPECT_EQ(known_alignment(i), 1);
  EXPECT_EQ(known_alignment(i * 8 + j * 4), 4);
  EXPECT_EQ(known_alignment(i * 8 + j * 4 + 2), 2);
  EXPECT_EQ(known_alignment(ir::floormod(i * 8, ir::Expr(int64_t{12}))), 4);
  EXPECT_EQ(known_alignment(ir::floordiv(i * 8, ir::Expr(int64_t{2}))), 1);  // a quotient: nothing known
  EXPECT_EQ(offset_alignment({i, j * 4}, {10, 8}), 4);
  EXPECT_EQ(offset_alignment({i, j * 4}, {10, 6}), 2);
}

// A loop fused and split into vectors indexes through a quotient and a
// remainder: (t * 8 + l) / 16 and (t * 8 + l) % 16 over lanes l < 8 are
// one row and 8 consecutive columns, unless the lanes could cross a row.
TEST(GpuSource, LaneStrideSeesThroughQuotientsAndRemaindersTheLanesDoNotCross) {
  ir::Var t("t"), l("l");
  const ir::Expr sixteen(int64_t{16});
  const ir::Expr row = ir::floordiv(t * 8 + l, sixteen), col = ir::floormod(t * 8 + l, sixteen);
  EXPECT_EQ(lane_stride(row, l, 8), 0);
  EXPECT_EQ(lane_stride(col, l, 8), 1);
  EXPECT_EQ(lane_access_stride({row, col}, {4, 16}, l, 8), 1);
  EXPECT_EQ(lane_stride(col * 3 + row, l, 8), 3);
  // Not: 8 lanes from t * 4 may cross a row; a divisor the lanes do not
  // divide; a remainder of a strided operand. Without lanes, nothing.
  EXPECT_EQ(lane_stride(ir::floormod(t * 4 + l, sixteen), l, 8), std::nullopt);
  EXPECT_EQ(lane_stride(ir::floormod(t * 8 + l, ir::Expr(int64_t{12})), l, 8), std::nullopt);
  EXPECT_EQ(lane_stride(ir::floormod(t * 16 + l * 2, sixteen), l, 8), std::nullopt);
  EXPECT_EQ(access_stride({row, col}, {4, 16}, l.node()), std::nullopt);
}

// An NHWC window's vector of 8 channels k = t * 8 + l of 64: its tap
// k / 64 and the tap's row (k / 64) / 3 and column (k / 64) % 3 are the
// lanes' own by any divisor, and so is a padding check on them; not a
// quotient of a value the lanes do not share.
TEST(GpuSource, LanesShareAQuotientOfWhatTheyShareAndChecksOnIt) {
  ir::Var t("t"), l("l"), y("y");
  const ir::Expr tap = ir::floordiv(t * 8 + l, ir::Expr(int64_t{64})), three(int64_t{3});
  EXPECT_EQ(lane_stride(ir::floordiv(tap, three), l, 8), 0);
  EXPECT_EQ(lane_stride(ir::floormod(tap, three) + y, l, 8), 0);
  EXPECT_TRUE(lane_uniform(ir::Expr(y) + ir::floordiv(tap, three) >= ir::Expr(int64_t{1}) &&
                               ir::Expr(y) + ir::floormod(tap, three) < ir::Expr(int64_t{57}),
                           l, 8));
  EXPECT_EQ(lane_stride(ir::floordiv(t * 8 + l, three), l, 8), std::nullopt);
  EXPECT_FALSE(lane_uniform(ir::floordiv(t * 8 + l, three) < ir::Expr(int64_t{5}), l, 8));
}

ops::OpArgs conv_args(ops::Shape input, ops::Shape weight, int64_t pad, int64_t stride, int64_t dilation = 1) {
  ops::OpArgs a;
  a.input = std::move(input);
  a.weight = std::move(weight);
  a.pad = pad;
  a.stride = stride;
  a.dilation = dilation;
  a.bias = a.relu = true;
  return a;
}

TEST(GpuSource, ConvScheduleTilesChannelsRowsAndColumnsWithBothOperandsShared) {
  // ResNet's 3x3 layer at 28 x 28: 7 x 4 spatial threads divide the rows and
  // columns, 8 channel threads of 4 outputs each: 64 channels in two blocks.
  // 56 blocks are few (schedule::kSplitReductionBlocks): the 64 input
  // channels are summed in four ranges of 16 (144 products each; eight
  // ranges would add fewer than kMinPartialReduce), so blockIdx.z counts 4
  // ranges x 2 channel blocks and a second kernel adds the ranges.
  const ops::Workload w = ops::make_workload("conv2d", conv_args({1, 64, 28, 28}, {64, 64, 3, 3}, 1, 1));
  const schedule::GpuConvPlan plan = schedule::gpu_conv_plan(w.dag.outputs()[0]->shape, 64, 1024, 9);
  EXPECT_EQ(plan.threads_x, 7);
  EXPECT_EQ(plan.threads_y, 4);
  EXPECT_EQ(plan.threads_f, 8);
  EXPECT_EQ(plan.per_f, 4);
  EXPECT_EQ(plan.split_rc, 4);
  const tir::LoweredFunc f = lowered(w, schedule::best_gpu_schedule(w.dag, {}));
  const GpuSource cuda = emit_gpu_source(f, {}, GpuDialect::Cuda);
  ASSERT_EQ(cuda.program.kernels.size(), 2u) << cuda.code;
  EXPECT_EQ(cuda.program.kernels[1].grid, (std::array<int64_t, 3>{(64 * 28 * 28 + 255) / 256, 1, 1}));
  const tir::DeviceKernel& k = cuda.program.kernels[0];
  EXPECT_EQ(k.grid, (std::array<int64_t, 3>{4, 7, 8}));
  EXPECT_EQ(k.block, (std::array<int64_t, 3>{7, 4, 8}));
  // Per step of 8 channels: the padded window (8 x 6 x 9) and the weights (32 x 8 x 3 x 3).
  EXPECT_EQ(k.shared_bytes, 4 * (8 * 6 * 9 + 32 * 8 * 9));
  EXPECT_EQ(k.shared_bytes, schedule::gpu_conv_shared_bytes(plan, 3, 3, 1, 1, 1, 1));
  for (const char* piece :
       {"blockIdx.z", "threadIdx.z", "__syncthreads();", "__shared__ __align__(16) float pad_temp_cache[432];"})
    EXPECT_NE(cuda.code.find(piece), std::string::npos) << piece << "\n" << cuda.code;
}

// ResNet-18's last stages at batch 1: 56 and 32 blocks of tiles, split until
// 256 blocks; a batch of 16 fills the GPU unsplit.
TEST(GpuSource, ConvPlanSplitsTheChannelsOfFewBlocks) {
  auto blocks = [](const std::vector<int64_t>& out, const schedule::GpuConvPlan& p) {
    auto tiles = [](int64_t extent, int64_t tile) { return (extent + tile - 1) / tile; };
    return out[0] * tiles(out[1], p.threads_f * p.per_f) * tiles(out[2], p.threads_y * p.per_y) *
           tiles(out[3], p.threads_x * p.per_x);
  };
  const std::vector<int64_t> layer3 = {1, 256, 14, 14}, layer4 = {1, 512, 7, 7}, layer4_b16 = {16, 512, 7, 7};
  const schedule::GpuConvPlan p3 = schedule::gpu_conv_plan(layer3, 256, 1024, 9);
  EXPECT_EQ(blocks(layer3, p3), 56);
  EXPECT_EQ(p3.split_rc, 8);  // 448 blocks, 32 channels (288 products) a range
  const schedule::GpuConvPlan p4 = schedule::gpu_conv_plan(layer4, 512, 1024, 9);
  EXPECT_EQ(blocks(layer4, p4), 32);
  EXPECT_EQ(p4.split_rc, 8);  // 256 blocks
  EXPECT_EQ(schedule::gpu_conv_plan(layer4_b16, 512, 1024, 9).split_rc, 1);
  // A downsampling 1x1 over 128 channels: halves would add 64 products.
  EXPECT_EQ(schedule::gpu_conv_plan(layer3, 128, 1024, 1).split_rc, 1);
  // The split is a power of two dividing the channels in whole steps.
  EXPECT_EQ(schedule::reduction_split(32, 4608, 512, 8), 8);
  EXPECT_EQ(schedule::reduction_split(32, 4608, 24, 8), 1);     // 24 channels: no power of two of whole steps
  EXPECT_EQ(schedule::reduction_split(1, 1 << 20, 1 << 20, 1), schedule::kMaxReductionSplit);
  EXPECT_EQ(schedule::reduction_split(300, 4608, 512, 8), 1);   // enough blocks already
}

TEST(GpuSource, ConvScheduleStagesFewerChannelsWhereSharedMemoryIsShort) {
  const ops::Workload w = ops::make_workload("conv2d", conv_args({1, 64, 28, 28}, {64, 64, 3, 3}, 1, 1));
  const schedule::Trace trace = *schedule::gpu_conv2d_schedule(w.dag, 1024, 8 * 1024);
  const GpuSource cuda = emit_gpu_source(lowered(w, trace), {}, GpuDialect::Cuda);
  EXPECT_LE(cuda.program.kernels.at(0).shared_bytes, 8 * 1024);
  EXPECT_EQ(cuda.program.kernels.at(0).shared_bytes, 4 * (4 * 6 * 9 + 32 * 4 * 9));  // 4 channels a step
  EXPECT_FALSE(schedule::gpu_conv2d_schedule(w.dag, 1024, 1024).has_value());  // not even one channel fits
}

// A network's last dense at batch 1 (1000 outputs of 512 products, less
// than one 64 x 64 tile): a block of 256 threads per output reduces it,
// the bias follows in a second kernel (it was a thread per output: 4 blocks).
// A convolution of many outputs keeps its epilogue in its threads.
TEST(GpuSource, DefaultScheduleReducesFewLongOutputsAcrossThreads) {
  const ops::Workload fc = ops::make_workload("dense", matmul_args({1, 512}, {1000, 512}, true));
  const GpuSource cuda = emit_gpu_source(lowered(fc, schedule::best_gpu_schedule(fc.dag, {})), {}, GpuDialect::Cuda);
  ASSERT_EQ(cuda.program.kernels.size(), 2u) << cuda.code;
  EXPECT_EQ(cuda.program.kernels[0].grid, (std::array<int64_t, 3>{1000, 1, 1}));
  EXPECT_EQ(cuda.program.kernels[0].block, (std::array<int64_t, 3>{256, 1, 1}));
  EXPECT_EQ(cuda.program.kernels[1].grid, (std::array<int64_t, 3>{4, 1, 1}));  // 1000 biases, 256 a block
  const ops::Workload conv = ops::make_workload("conv2d", conv_args({1, 8, 32, 32}, {32, 8, 3, 3}, 1, 1));
  const GpuSource wide =
      emit_gpu_source(lowered(conv, schedule::gpu_default_schedule(conv.dag, 1024)), {}, GpuDialect::Cuda);
  EXPECT_EQ(wide.program.kernels.size(), 1u) << wide.code;  // 32768 outputs of 72 products: one each
  const ops::Workload few = ops::make_workload("conv2d", conv_args({1, 8, 8, 8}, {8, 8, 3, 3}, 1, 1));
  const GpuSource reduced =
      emit_gpu_source(lowered(few, schedule::gpu_default_schedule(few.dag, 1024)), {}, GpuDialect::Cuda);
  EXPECT_EQ(reduced.program.kernels.size(), 2u) << reduced.code;  // 512 outputs: across threads
}

TEST(GpuSource, DepthwiseScheduleTilesRowsAndColumnsPerChannel) {
  ops::OpArgs a;
  a.input = {1, 32, 56, 56};
  a.weight = {32, 1, 3, 3};
  a.pad = 1;
  const ops::Workload w = ops::make_workload("depthwise_conv2d", a);
  const schedule::GpuDepthwisePlan plan = schedule::gpu_depthwise_plan(w.dag.outputs()[0]->shape);
  EXPECT_EQ(plan.threads_x, 28);  // the largest of 4..32 dividing 56
  EXPECT_EQ(plan.threads_y, 8);
  const GpuSource cuda = emit_gpu_source(lowered(w, schedule::best_gpu_schedule(w.dag, {})), {}, GpuDialect::Cuda);
  ASSERT_EQ(cuda.program.kernels.size(), 1u) << cuda.code;
  EXPECT_EQ(cuda.program.kernels[0].grid, (std::array<int64_t, 3>{2, 7, 32}));
  EXPECT_EQ(cuda.program.kernels[0].block, (std::array<int64_t, 3>{28, 8, 1}));
}

// In NHWC the threads run along the channels (a warp's loads and the
// weights' one coalesced row of a pixel), a block 32 channels x 8 columns,
// the taps unrolled: no reduce loop is left in the kernel.
TEST(GpuSource, DepthwiseNhwcScheduleRunsTheThreadsAlongTheChannels) {
  ops::OpArgs a;
  a.input = {2, 64, 28, 28};
  a.weight = {64, 1, 3, 3};
  a.pad = 1;
  a.layout = "NHWC";
  const ops::Workload w = ops::make_workload("depthwise_conv2d", a);
  const schedule::GpuDepthwiseNhwcPlan plan = schedule::gpu_depthwise_nhwc_plan(w.dag.outputs()[0]->shape);
  EXPECT_EQ(plan.threads_c, 32);
  EXPECT_EQ(plan.threads_x, 7);  // the largest of 1..8 dividing 28
  const GpuSource cuda = emit_gpu_source(lowered(w, schedule::best_gpu_schedule(w.dag, {})), {}, GpuDialect::Cuda);
  ASSERT_EQ(cuda.program.kernels.size(), 1u) << cuda.code;
  EXPECT_EQ(cuda.program.kernels[0].grid, (std::array<int64_t, 3>{2, 4, 56}));
  EXPECT_EQ(cuda.program.kernels[0].block, (std::array<int64_t, 3>{32, 7, 1}));
  EXPECT_EQ(cuda.code.find("for (int"), std::string::npos) << cuda.code;
}

// Untuned, an NHWC convolution's product runs as many threads along the
// channels as give tiles dividing them: 96 channels, 8 threads of 4.
TEST(GpuSource, NhwcProductTilesDivideTheChannels) {
  const ops::Workload w = ops::make_workload("conv2d_nhwc_implicit_gemm", conv_args({1, 32, 14, 14}, {96, 32, 1, 1}, 0, 1));
  const GpuSource cuda = emit_gpu_source(lowered(w, schedule::best_gpu_schedule(w.dag, {})), {}, GpuDialect::Cuda);
  ASSERT_FALSE(cuda.program.kernels.empty()) << cuda.code;
  EXPECT_EQ(cuda.program.kernels[0].block[0], 8) << cuda.code;
  EXPECT_EQ(cuda.code.find(" < 96)"), std::string::npos) << cuda.code;  // no channel guard
}

TEST(GpuSource, VerifierNamesWhatNoGpuCanRun) {
  const ops::Workload w = ops::make_workload("dense", matmul_args({128, 64}, {128, 64}, false));
  // Shared memory beyond the target's limit.
  target::GpuLimits small;
  small.max_shared_memory_per_block = 2048;
  const tir::LoweredFunc tiled = lowered(w, *schedule::gpu_matmul_schedule(w.dag, 1024));
  EXPECT_NE(expect_error([&] { emit_gpu_source(tiled, small, GpuDialect::Cuda); })
                .find("4096 bytes of shared memory per block; the target allows 2048"),
            std::string::npos);
  // More threads than the target's blocks hold.
  target::GpuLimits narrow;
  narrow.max_threads_per_block = 128;
  EXPECT_NE(expect_error([&] { emit_gpu_source(tiled, narrow, GpuDialect::Cuda); }).find("256 threads; the target allows 128"),
            std::string::npos);
  // A CPU schedule: nothing bound.
  const tir::LoweredFunc cpu = lowered(w, schedule::default_schedule(w.dag));
  EXPECT_NE(expect_error([&] { emit_gpu_source(cpu, {}, GpuDialect::Cuda); }).find("CPU parallel loop"),
            std::string::npos);
  // Two extents on one thread axis: the product's threads differ from its epilogue's.
  const ops::Workload relu = ops::make_workload("dense", matmul_args({64, 32}, {64, 32}, true));
  schedule::Trace mismatched;
  const auto& names = relu.dag.tensors();
  std::string out = relu.dag.outputs()[0]->name, product;
  for (const auto& x : names)
    if (x->tag == "dense") product = x->name;
  for (const auto& x : names)
    if (!x->is_placeholder() && x->name != out && x->name != product) mismatched.compute_inline(x->name);
  mismatched.split(out, "ax0", {32});
  mismatched.bind(out, "ax0.0", schedule::Annotation::BlockX);
  mismatched.bind(out, "ax0.1", schedule::Annotation::ThreadX);
  mismatched.split(product, "i", {64});
  mismatched.bind(product, "i.1", schedule::Annotation::ThreadX);
  mismatched.compute_at(product, out, "ax0.0");
  const std::string two_extents =
      expect_error([&] { emit_gpu_source(lowered(relu, mismatched), {}, GpuDialect::Cuda); });
  EXPECT_NE(two_extents.find("threadIdx.x is bound to loops of 64 and of 32 iterations"), std::string::npos)
      << two_extents;
}

TEST(GpuSource, BarrierUnderAThreadDependentConditionIsRejected) {
  ir::Tensor a = ir::placeholder({64}, "a"), b = ir::placeholder({64}, "b");
  ir::Var tx("tx");
  tir::Stmt body = tir::make_for(
      tx, 64, tir::ForKind::ThreadX,
      tir::make_seq({tir::make_if(tx < 32, tir::make_barrier()), tir::make_store(b, {tx}, ir::load(a, {tx}))}));
  tir::LoweredFunc f{"divergent", {a, b}, body};
  EXPECT_NE(expect_error([&] { emit_gpu_source(f, {}, GpuDialect::Cuda); }).find("a barrier under a condition on the thread"),
            std::string::npos);
}

// Runs the workload's GPU schedule on the target's device (the OpenCL
// device, or a CUDA GPU) and compares with its reference.
void expect_matches_reference(const ops::Workload& w, const schedule::Trace& trace, const std::string& target) {
  const std::string why = target == "cuda" ? runtime::cuda_unavailable_reason() : runtime::opencl_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << target << ": " << why;
  const test::GpuRun run = test::run_against_reference(w, lowered(w, trace), target::Target::parse(target), 3);
  EXPECT_LE(run.max_relative_error, 1e-5) << w.op << "\n" << run.source;
}

// BERT-base at batch 1, sequence 128: the projections' 64 x 64 tiles are 24
// (768 x 768) to 96 blocks (768 -> 3072); K is split until 256 blocks, every
// range at least kMinPartialReduce deep. A batch of 16 (2048 rows) is not.
TEST(GpuSource, MatmulPlanSplitsTheKOfFewTiles) {
  auto split_of = [](int64_t m, int64_t n, int64_t k) {
    const ops::Workload w = ops::make_workload("dense", matmul_args({m, k}, {n, k}, true));
    return schedule::gpu_matmul_split(w.dag, {}).split_k;
  };
  EXPECT_EQ(split_of(128, 768, 768), 4);    // 24 blocks -> 96: ranges of 192 (96 would be too shallow)
  EXPECT_EQ(split_of(128, 2304, 768), 4);   // 72 -> 288
  EXPECT_EQ(split_of(128, 768, 3072), 16);  // 24 -> 384: at most kMaxReductionSplit
  EXPECT_EQ(split_of(2048, 768, 768), 1);   // 384 blocks
  // The split kernel pair computes what the single kernel does (PoCL).
  if (!runtime::opencl_unavailable_reason().empty()) GTEST_SKIP() << runtime::opencl_unavailable_reason();
  const ops::Workload w = ops::make_workload("dense", matmul_args({128, 256}, {64, 256}, true));
  for (int64_t split : {1, 2, 32}) {
    const auto trace = schedule::gpu_matmul_schedule(w.dag, 1024, {.split_k = split});
    ASSERT_TRUE(trace.has_value()) << split;
    expect_matches_reference(w, *trace, "opencl");
  }
  EXPECT_FALSE(schedule::gpu_matmul_schedule(w.dag, 1024, {.split_k = 3}).has_value());  // 3 does not divide 256
}

// Attention over q (batch, m, d), k and v (batch, n, d), batch = groups x
// heads, with a mask of `mask`'s shape (broadcast to (groups, heads, m, n))
// when it has one; `sequence_first`, over q (groups, m, heads, d), k and v
// (groups, n, heads, d).
ops::Workload attention_workload(int64_t batch, int64_t m, int64_t n, int64_t d, int64_t heads,
                                 const ops::Shape& mask = {}, bool sequence_first = false) {
  const ops::Attrs attrs = ops::AttentionAttrs{0.25, heads, !mask.empty(), 4, 0, sequence_first};
  auto rows = [&](int64_t r) {
    return sequence_first ? ops::Shape{batch / heads, r, heads, d} : ops::Shape{batch, r, d};
  };
  std::vector<ops::Shape> shapes = {rows(m), rows(n), rows(n)};
  std::vector<ir::Tensor> in = {ir::placeholder(rows(m), "q"), ir::placeholder(rows(n), "k"),
                                ir::placeholder(rows(n), "v")};
  if (!mask.empty()) {
    shapes.push_back(mask);
    in.push_back(ir::placeholder(mask, "mask"));
  }
  const ops::Operator& op = ops::find_operator("attention");
  const ops::Shape out = rows(m);
  ir::ComputeDAG dag({op.compute({attrs, shapes, out, {}}, in)});
  // A workload's reference takes the DAG's placeholders in its order (q, k,
  // the mask, v: as the stages read them), the operator's in its own.
  const std::vector<ir::Tensor> placeholders = dag.placeholders();
  std::vector<size_t> at;
  for (const ir::Tensor& t : in)
    at.push_back(std::find(placeholders.begin(), placeholders.end(), t) - placeholders.begin());
  // The call holds its attributes by reference: they live in the closure.
  return {"attention", std::move(dag), [&op, attrs, shapes, out, at](const std::vector<const float*>& x, float* y) {
            std::vector<const float*> operands;
            for (size_t i : at) operands.push_back(x.at(i));
            op.reference({attrs, shapes, out, {}}, operands, y);
          }};
}

// Attention's probabilities (exp(score - maximum) / sum, per key tile) are
// read by the values once per channel: the default schedule computes them
// once, a kernel of their own, instead of inlining them into the values'
// kernel, which then recomputed every exponential once per channel. Its
// transposed keys likewise (a layout copy): the scores' neighbouring
// threads then read neighbouring keys, where inlined they read keys a
// head's width apart. Same result on PoCL as the reference.
TEST(GpuSource, DefaultScheduleComputesAttentionKeysAndProbabilitiesOnce) {
  const ops::Workload w = attention_workload(3, 10, 12, 16, 3);
  const schedule::Trace trace = schedule::gpu_default_schedule(w.dag, 1024);
  const GpuSource cuda = emit_gpu_source(lowered(w, trace), {}, GpuDialect::Cuda);
  std::map<std::string, std::string> kernel_writing = test::kernels_by_written_buffer(cuda.code);
  ASSERT_TRUE(kernel_writing.count("T_attention_p")) << cuda.code;
  ASSERT_TRUE(kernel_writing.count("T_attention_values")) << cuda.code;
  EXPECT_NE(kernel_writing["T_attention_p"].find("expf("), std::string::npos);
  const std::string& values = kernel_writing["T_attention_values"];
  EXPECT_EQ(values.find("expf("), std::string::npos) << values;
  ASSERT_TRUE(kernel_writing.count("T_attention_kT")) << cuda.code;
  EXPECT_NE(kernel_writing["T_attention_scores"].find("T_attention_kT["), std::string::npos) << cuda.code;
  expect_matches_reference(w, trace, "opencl");
}

// What a GPU runs attention by untuned (schedule::gpu_attention_schedule):
// both products tiled in blocks, their operands staged in shared memory; a
// key tile's maximum and sum a block per row, its threads reducing together
// (the default schedule gave each row to one thread, a warp then reading 32
// rows a row apart); the probabilities computed where the values fetch
// them, the key tiles combined in the output's kernel. Ragged
// tiles, two key tiles with a mask per group, BERT's head (64 wide, 128
// keys) with a mask per query and without, a small head, one query over
// 37 keys (a decoder's step); BERT's heads and a masked pair read and
// written sequence first; each equals the reference on PoCL.
TEST(GpuSource, AttentionScheduleTilesBothProductsAndReducesARowPerBlock) {
  struct Case {
    int64_t batch, m, n, d, heads;
    ops::Shape mask;
    bool sequence_first = false;
  };
  for (const Case& c :
       {Case{3, 10, 12, 16, 3, {}}, Case{4, 70, 320, 32, 2, {2, 1, 1, 320}}, Case{2, 128, 128, 64, 2, {1, 1, 128, 128}},
        Case{2, 128, 128, 64, 2, {}}, Case{2, 32, 32, 16, 2, {}}, Case{4, 1, 37, 16, 2, {}},
        Case{4, 128, 128, 64, 4, {}, true}, Case{4, 20, 24, 16, 2, {2, 1, 1, 24}, true}}) {
    SCOPED_TRACE("n = " + std::to_string(c.n) + (c.sequence_first ? ", sequence first" : ""));
    const ops::Workload w = attention_workload(c.batch, c.m, c.n, c.d, c.heads, c.mask, c.sequence_first);
    const std::optional<schedule::Trace> trace = schedule::gpu_attention_schedule(w.dag, 1024);
    ASSERT_TRUE(trace.has_value());
    EXPECT_EQ(schedule::best_gpu_schedule(w.dag, {}).to_json(), trace->to_json());
    const GpuSource cuda = emit_gpu_source(lowered(w, *trace), {}, GpuDialect::Cuda);
    std::map<std::string, std::string> kernel_writing = test::kernels_by_written_buffer(cuda.code);
    for (const char* product : {"T_attention_scores", "T_attention_values"}) {
      ASSERT_TRUE(kernel_writing.count(product)) << cuda.code;
      EXPECT_NE(kernel_writing[product].find("__shared__"), std::string::npos) << kernel_writing[product];
      EXPECT_NE(kernel_writing[product].find("__syncthreads()"), std::string::npos) << kernel_writing[product];
    }
    // A block per row of each key tile, of the rows and keys the kernel computes (whole tiles of 4 rows, keys
    // past 16 in whole vectors: 37 -> 48, 70 rows -> 72).
    const int64_t keys_computed = ops::padded_keys(c.n), keys = ops::key_tile(keys_computed, 0);
    const int64_t rows = c.batch * ops::padded_rows(c.m, 4) * (keys_computed / keys);
    for (const std::string written : {"T_attention_tile_max", "T_attention_tile_sum"}) {
      const std::string& source = kernel_writing[written];
      EXPECT_NE(source.find(written + "_red["), std::string::npos) << source;
      for (const tir::DeviceKernel& kernel : cuda.program.kernels) {
        if (source.find(" " + kernel.name + "(") == std::string::npos) continue;
        EXPECT_EQ(kernel.grid[0] * kernel.grid[1] * kernel.grid[2], rows) << written;
        EXPECT_GE(kernel.threads_per_block(), std::min<int64_t>(keys, 32)) << written;
      }
    }
    // The probabilities computed in the values' fetch, the key tiles
    // combined in the output's threads: six kernels, the transposed keys,
    // the two products, the two reductions and the output.
    EXPECT_EQ(cuda.program.kernels.size(), 6u);
    for (const char* inlined : {"T_attention_p", "T_attention_max", "T_attention_weight", "T_attention_sum"})
      EXPECT_FALSE(kernel_writing.count(inlined)) << inlined;
    EXPECT_NE(kernel_writing["T_attention_values"].find("expf("), std::string::npos);
    expect_matches_reference(w, *trace, "opencl");
  }
  // Not an attention: nothing.
  EXPECT_FALSE(schedule::gpu_attention_schedule(ops::make_workload("softmax", {.input = {6, 50}}).dag, 1024));
}

// BERT-base's head, masked, as CUDA C on an NVIDIA GPU (skipped where there is none).
TEST(GpuSource, AttentionScheduleOnCudaMatchesTheReference) {
  const ops::Workload w = attention_workload(24, 128, 128, 64, 12, {2, 1, 1, 128});
  expect_matches_reference(w, *schedule::gpu_attention_schedule(w.dag, 1024), "cuda");
}

// The same in half storage, as a network in --dtype float16 runs it: within
// a half's rounding on PoCL, and its CUDA C compiles with NVRTC for sm_80
// and sm_90 without spills.
TEST(GpuSource, AttentionScheduleInHalfStorage) {
  const ops::Workload w = attention_workload(2, 128, 128, 64, 2, {1, 1, 128, 128});
  const ops::Workload half{w.op, ir::with_half_storage(w.dag), w.reference};
  const schedule::Trace trace = *schedule::gpu_attention_schedule(half.dag, 1024);
  const tir::LoweredFunc f = lowered(half, trace);
  if (runtime::opencl_unavailable_reason().empty())
    EXPECT_LE(test::run_half_against_reference(half, f, target::Target::parse("opencl"), 5).max_relative_error, 4e-3);
  const std::string why = nvrtc_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << "NVRTC: " << why;
  const GpuSource source = emit_gpu_source(f, {}, GpuDialect::Cuda);
  for (int arch : {80, 90}) {
    const CudaBinary binary = compile_cuda(source.code, arch, half.op);
    ASSERT_EQ(binary.kernels.size(), source.program.kernels.size()) << binary.log;
    for (const CudaKernelResources& k : binary.kernels) EXPECT_EQ(k.spill_store_bytes, 0) << k.name;
  }
}

// Layer norm over x of `shape` from `axis` on, with its scale and bias.
ops::Workload layer_norm_workload(const ops::Shape& shape, int64_t axis) {
  const ops::Attrs attrs = ops::LayerNormAttrs{axis, 1e-5f};
  const ops::Shape inner(shape.begin() + (axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis), shape.end());
  const std::vector<ops::Shape> shapes = {shape, inner, inner};
  const ops::Operator& op = ops::find_operator("layer_norm");
  ir::ComputeDAG dag(
      {op.compute({attrs, shapes, shape, {}},
                  {ir::placeholder(shape, "x"), ir::placeholder(inner, "scale"), ir::placeholder(inner, "bias")})});
  return {"layer_norm", std::move(dag), [&op, attrs, shapes, shape](const std::vector<const float*>& x, float* y) {
            op.reference({attrs, shapes, shape, {}}, x, y);
          }};
}

// Softmax and layer norm (schedule::gpu_rows_schedule): one kernel of a
// block per row, each reduction's threads reducing together into shared
// memory; rows of a head's width, BERT's hidden size, a ragged last
// stretch of threads, layer norm over two axes. Each equals the reference
// on PoCL. Rows shorter than a warp (a thread each does better) and a
// dense are not its DAGs.
TEST(GpuSource, RowsScheduleRunsABlockPerRowInOneKernel) {
  struct Case {
    std::string name;
    ops::Workload workload;
    int64_t rows, threads;
  };
  const std::vector<Case> cases = {
      {"softmax 6x50", ops::make_workload("softmax", {.input = {6, 50}}), 6, 32},
      {"softmax 2x3x300", ops::make_workload("softmax", {.input = {2, 3, 300}}), 6, 256},
      {"layer norm 128x768", layer_norm_workload({128, 768}, -1), 128, 256},
      {"layer norm 4x6x10 over 6x10", layer_norm_workload({4, 6, 10}, -2), 4, 32},
      {"layer norm of one row", layer_norm_workload({1, 768}, -1), 1, 256},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::optional<schedule::Trace> trace = schedule::gpu_rows_schedule(c.workload.dag, 1024);
    ASSERT_TRUE(trace.has_value());
    EXPECT_EQ(schedule::best_gpu_schedule(c.workload.dag, {}).to_json(), trace->to_json());
    const GpuSource cuda = emit_gpu_source(lowered(c.workload, *trace), {}, GpuDialect::Cuda);
    ASSERT_EQ(cuda.program.kernels.size(), 1u) << cuda.code;
    const tir::DeviceKernel& kernel = cuda.program.kernels[0];
    EXPECT_EQ(kernel.grid[0] * kernel.grid[1] * kernel.grid[2], c.rows);
    EXPECT_EQ(kernel.threads_per_block(), c.threads);
    EXPECT_GT(kernel.shared_bytes, 0);
    expect_matches_reference(c.workload, *trace, "opencl");
  }
  EXPECT_FALSE(schedule::gpu_rows_schedule(ops::make_workload("softmax", {.input = {64, 16}}).dag, 1024));
  const ops::Workload dense = ops::make_workload("dense", matmul_args({64, 64}, {64, 64}, true));
  EXPECT_FALSE(schedule::gpu_rows_schedule(dense.dag, 1024));
}

// BERT's layer norm and attention's row softmax as CUDA C on an NVIDIA GPU
// (skipped where there is none).
TEST(GpuSource, RowsScheduleOnCudaMatchesTheReference) {
  for (const ops::Workload& w :
       {layer_norm_workload({256, 768}, -1), ops::make_workload("softmax", {.input = {1536, 128}})})
    expect_matches_reference(w, *schedule::gpu_rows_schedule(w.dag, 1024), "cuda");
}

// Layer norm's squares read its mean, which one thread stored in shared
// memory: a barrier stands between that store and every read (PoCL runs a
// block's work-items one after another between barriers, so only the
// source can show it).
TEST(GpuSource, RowsScheduleWaitsForTheMeanBeforeTheSquaresReadIt) {
  const ops::Workload w = layer_norm_workload({16, 768}, -1);
  const std::string code =
      emit_gpu_source(lowered(w, *schedule::gpu_rows_schedule(w.dag, 1024)), {}, GpuDialect::Cuda).code;
  const size_t stored = code.find("T_layer_norm_sum_local[0] = T_layer_norm_sum_local_red[0]");
  ASSERT_NE(stored, std::string::npos) << code;
  const size_t read = code.find("T_layer_norm_sum_local[0]*", stored);
  ASSERT_NE(read, std::string::npos) << code;
  const size_t barrier = code.find("__syncthreads()", stored);
  EXPECT_LT(barrier, read) << code;
}

struct GpuCase {
  std::string name, op;
  ops::OpArgs args;
};

std::vector<GpuCase> gpu_cases() {
  std::vector<GpuCase> cases;
  cases.push_back({"DenseTiledWithEpilogue", "dense", matmul_args({128, 72}, {96, 72}, true)});
  cases.push_back({"DenseTiledRaggedEdges", "dense", matmul_args({100, 37}, {70, 37}, false)});
  cases.push_back({"DenseOneRow", "dense", matmul_args({1, 64}, {50, 64}, true)});
  ops::OpArgs packed = matmul_args({96, 40}, {128, 40}, true);  // a network's dense: the weight packed (N/16, K, 16)
  packed.layout = "packed";
  packed.oc_bn = 16;
  cases.push_back({"DensePackedWeight", "dense", packed});
  cases.push_back({"BatchMatmulTiled", "batch_matmul", matmul_args({2, 64, 40}, {2, 80, 40}, false)});
  // Split-K (schedule::gpu_matmul_split): one 64 x 64 tile's K in 8 ranges,
  // with the epilogue in the adding kernel; two batches' in 4; a
  // convolution's product over 576 taps in 4, the adding kernel writing the
  // NCHW image.
  cases.push_back({"DenseSplitK", "dense", matmul_args({64, 1024}, {64, 1024}, true)});
  ops::OpArgs packed_split = matmul_args({64, 512}, {128, 512}, true);  // BERT's projections: packed, split in 4
  packed_split.layout = "packed";
  packed_split.oc_bn = 16;
  cases.push_back({"DensePackedWeightSplitK", "dense", packed_split});
  cases.push_back({"BatchMatmulSplitK", "batch_matmul", matmul_args({2, 64, 512}, {2, 64, 512}, false)});
  cases.push_back(
      {"Conv2dImplicitGemmSplitK", "conv2d_nchw_implicit_gemm", conv_args({1, 64, 8, 8}, {64, 64, 3, 3}, 1, 1)});
  // The same in NHWC (positions x channels, the adding kernel writing NHWC
  // images); and unsplit over two images with ragged positions.
  cases.push_back(
      {"Conv2dNhwcImplicitGemmSplitK", "conv2d_nhwc_implicit_gemm", conv_args({1, 64, 8, 8}, {64, 64, 3, 3}, 1, 1)});
  cases.push_back(
      {"Conv2dNhwcImplicitGemmStrided", "conv2d_nhwc_implicit_gemm", conv_args({2, 16, 15, 15}, {32, 16, 3, 3}, 1, 2)});
  // MobileNet-v2's 96-channel 1x1 at 14 x 14: tiles 32 channels wide.
  cases.push_back(
      {"Conv2dNhwcImplicitGemm96Channels", "conv2d_nhwc_implicit_gemm", conv_args({1, 32, 14, 14}, {96, 32, 1, 1}, 0, 1)});
  ops::OpArgs conv;
  conv.input = {1, 8, 14, 14};
  conv.weight = {16, 8, 3, 3};
  conv.pad = 1;
  conv.stride = 2;
  conv.bias = conv.relu = true;
  cases.push_back({"Conv2dNchwPaddedStrided", "conv2d", conv});
  // The tiled convolution: ragged channel steps, rows, columns and channel
  // blocks; the 7x7 stem at stride 2; dilation; 1x1 over a batch.
  cases.push_back({"Conv2dTiledRaggedEverywhere", "conv2d", conv_args({1, 12, 11, 13}, {20, 12, 3, 3}, 1, 1)});
  cases.push_back({"Conv2dStem7x7Stride2", "conv2d", conv_args({1, 3, 29, 30}, {16, 3, 7, 7}, 3, 2)});
  cases.push_back({"Conv2dDilated", "conv2d", conv_args({1, 8, 12, 12}, {8, 8, 3, 3}, 2, 1, 2)});
  cases.push_back({"Conv2dPointwiseBatch2", "conv2d", conv_args({2, 24, 9, 9}, {40, 24, 1, 1}, 0, 1)});
  cases.push_back({"Conv2dWideRows", "conv2d", conv_args({1, 4, 40, 40}, {16, 4, 3, 3}, 1, 1)});
  // ResNet-18's layer3 at batch 1 in small: 64 channels x 8 x 9 taps of
  // weights a step, 21 steps of 224 threads, staged (tir/stage_fetches.h).
  cases.push_back({"Conv2dWeightsIn21Steps", "conv2d", conv_args({1, 16, 14, 14}, {128, 16, 3, 3}, 1, 1)});
  // Split-K: 4 blocks of a 7 x 7 output, the 64 input channels in four
  // ranges summed by a second kernel (ragged rows too); over a batch of two
  // without an epilogue (the sum is the output itself).
  cases.push_back({"Conv2dSplitChannels", "conv2d", conv_args({1, 64, 7, 7}, {32, 64, 3, 3}, 1, 1)});
  ops::OpArgs split_bare = conv_args({2, 64, 5, 5}, {16, 64, 3, 3}, 1, 1);
  split_bare.bias = split_bare.relu = false;
  cases.push_back({"Conv2dSplitChannelsNoEpilogueBatch2", "conv2d", split_bare});
  // Winograd in NCHW: a ragged last tile row (7 x 7 in tiles of 4, two
  // images) with bias and relu; default and best schedules alike.
  ops::OpArgs winograd = conv_args({2, 16, 7, 7}, {24, 16, 3, 3}, 1, 1);
  winograd.winograd_tile = 4;
  winograd.bias = winograd.relu = true;
  cases.push_back({"Conv2dWinogradRaggedTiles", "conv2d_nchw_winograd", winograd});
  ops::OpArgs depthwise;
  depthwise.input = {1, 16, 10, 10};
  depthwise.weight = {16, 1, 3, 3};
  depthwise.pad = 1;
  cases.push_back({"DepthwiseConv2d", "depthwise_conv2d", depthwise});
  ops::OpArgs strided = depthwise;  // MobileNet's stride-2 depthwise at a ragged size: 15 -> 8
  strided.input = {2, 24, 15, 15};
  strided.weight = {24, 1, 3, 3};
  strided.stride = 2;
  strided.bias = strided.relu = true;
  cases.push_back({"DepthwiseStridedRaggedBatch2", "depthwise_conv2d", strided});
  ops::OpArgs strided_nhwc = strided;  // in NHWC, 37 channels: a ragged block of 32 along them
  strided_nhwc.input = {2, 37, 15, 15};
  strided_nhwc.weight = {37, 1, 3, 3};
  strided_nhwc.layout = "NHWC";
  cases.push_back({"DepthwiseNhwcStridedRaggedBatch2", "depthwise_conv2d", strided_nhwc});
  ops::OpArgs pool;
  pool.input = {1, 4, 9, 9};
  pool.pool = 3;
  pool.stride = 2;
  pool.pad = 1;
  cases.push_back({"MaxPool", "max_pool", pool});
  cases.push_back({"AvgPool", "avg_pool", pool});
  ops::OpArgs rows;
  rows.input = {6, 50};
  cases.push_back({"Softmax", "softmax", rows});
  ops::OpArgs global;
  global.input = {1, 8, 7, 7};
  cases.push_back({"GlobalAvgPool", "global_avg_pool", global});
  return cases;
}

class GpuOperator : public ::testing::TestWithParam<GpuCase> {};

TEST_P(GpuOperator, BestGpuScheduleMatchesTheReferenceOnOpenCl) {
  const ops::Workload w = ops::make_workload(GetParam().op, GetParam().args);
  expect_matches_reference(w, schedule::best_gpu_schedule(w.dag, {}), "opencl");
}

TEST_P(GpuOperator, DefaultGpuScheduleMatchesTheReferenceOnOpenCl) {
  const ops::Workload w = ops::make_workload(GetParam().op, GetParam().args);
  expect_matches_reference(w, schedule::gpu_default_schedule(w.dag, 1024), "opencl");
}

// The same kernels as CUDA C on an NVIDIA GPU (skipped where there is none).
TEST_P(GpuOperator, BestGpuScheduleMatchesTheReferenceOnCuda) {
  const ops::Workload w = ops::make_workload(GetParam().op, GetParam().args);
  expect_matches_reference(w, schedule::best_gpu_schedule(w.dag, {}), "cuda");
}

TEST_P(GpuOperator, CudaSourceCompilesWithNvrtcForAmpereAndHopper) {
  const std::string why = nvrtc_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << "NVRTC: " << why;
  const ops::Workload w = ops::make_workload(GetParam().op, GetParam().args);
  const GpuSource source = emit_gpu_source(lowered(w, schedule::best_gpu_schedule(w.dag, {})), {}, GpuDialect::Cuda);
  for (int arch : {80, 90}) {
    const CudaBinary binary = compile_cuda(source.code, arch, w.op);
    ASSERT_EQ(binary.kernels.size(), source.program.kernels.size()) << binary.log;
    for (const CudaKernelResources& k : binary.kernels) {
      EXPECT_GT(k.registers, 0) << k.name;
      // No spills, except where ptxas chose them: it may hold a 256-thread
      // block to 32 registers, a full multiprocessor's worth of blocks, for
      // a few spilled bytes (ptxas 13.0, sm_90, BatchMatmulTiled: 24 bytes
      // at 32 registers, where 40 registers spill nothing; the same source
      // without __launch_bounds__ takes the 40).
      const bool occupancy_trade = k.registers <= 32 && k.spill_store_bytes <= 32;
      if (!occupancy_trade) EXPECT_EQ(k.spill_store_bytes, 0) << k.name << ", " << k.registers << " registers";
    }
    EXPECT_EQ(binary.cubin.substr(0, 4), "\x7f" "ELF");
  }
}

INSTANTIATE_TEST_SUITE_P(Operators, GpuOperator, ::testing::ValuesIn(gpu_cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace tessera::codegen
