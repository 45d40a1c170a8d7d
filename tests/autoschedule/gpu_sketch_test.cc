// The GPU sketch rules (gpu_sketch_rules.h) on the DAGs the issue names:
// which rules made each sketch, that random annotations keep every block
// within the target's threads, and that every sketch, randomly annotated,
// lowers, passes the GPU verifier or is refused by it in one line, and runs
// on the OpenCL device (PoCL here) equal to the operator's reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>

#include "../codegen/gpu_run_util.h"
#include "autoschedule/cost_model.h"
#include "autoschedule/generate_sketches.h"
#include "autoschedule/gpu_sketch_rules.h"
#include "autoschedule/random_annotation.h"
#include "autoschedule/sketch_policy.h"
#include "features/gpu_features.h"
#include "ops/workloads.h"
#include "runtime/opencl_device.h"
#include "tessera/error.h"
#include "tir/lower.h"
#include "tir/printer.h"
#include "tir/verify_gpu.h"

namespace tessera::autoschedule {
namespace {

struct Case {
  std::string name;
  ops::Workload workload;
};

std::vector<Case> cases() {
  const auto pad1 = ops::Conv2dAttrs::symmetric(1, 1);
  const ops::Epilogue bias_relu{.bias = true, .relu = true};
  return {
      {"conv2d_nchw", ops::conv2d_nchw_workload({1, 8, 10, 10}, {16, 8, 3, 3}, pad1)},
      {"conv2d_nchw_bias_relu", ops::conv2d_nchw_workload({2, 8, 10, 10}, {16, 8, 3, 3}, pad1, bias_relu)},
      {"conv2d_nhwc", ops::conv2d_nhwc_workload({1, 10, 10, 8}, {3, 3, 8, 16}, ops::Conv2dAttrs::symmetric(2, 1))},
      {"depthwise_nchw", ops::depthwise_conv2d_nchw_workload({1, 16, 12, 12}, {16, 1, 3, 3}, pad1, bias_relu)},
      {"dense", ops::dense_workload({4, 64}, {48, 64})},
      {"dense_bias_relu", ops::dense_workload({8, 64}, {48, 64}, bias_relu)},
      {"batch_matmul", ops::batch_matmul_workload({2, 12, 32}, {2, 20, 32})},
      {"softmax", ops::softmax_workload({6, 100})},
  };
}

SketchContext opencl(const std::string& options = "") {
  return SketchContext{target::Target::parse("opencl" + options), 1};
}

// The candidate lowered, or nothing where the GPU verifier refuses it (in
// one line naming the kernel: too many threads or shared bytes for a block).
std::optional<tir::LoweredFunc> lowered_if_it_fits(const ops::Workload& w, const schedule::Trace& trace,
                                                   const SketchContext& ctx) {
  tir::LoweredFunc f = tir::lower(w.dag, trace, w.op);
  try {
    tir::verify_gpu(tir::split_device_kernels(f), ctx.target.gpu);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GPU kernel "), std::string::npos) << e.what();
    return std::nullopt;
  }
  return f;
}

TEST(GpuSketchGeneration, AnOutputConvolutionIsTiledInItsCopyOutsThreadsWithSharedFetches) {
  const auto sketches = generate_sketches(cases()[0].workload.dag, opencl());
  // With the accumulator tiled, or without it, one output per thread (the
  // cache write is a choice, as on CPUs).
  ASSERT_EQ(sketches.size(), 2u);
  EXPECT_EQ(sketches[1].print().find("multi-level"), std::string::npos) << sketches[1].print();
  const Sketch& s = sketches[0];
  const std::string text = s.print();
  // The accumulator in registers, tiled in the copy-out's threads; the
  // padding inlined into the input's shared copy.
  EXPECT_NE(text.find("cache write into conv2d_nchw.local"), std::string::npos) << text;
  EXPECT_NE(text.find("conv2d_nchw.local: GPU multi-level tiling in conv2d_nchw's threads"), std::string::npos) << text;
  EXPECT_NE(text.find("pad_temp: inlined"), std::string::npos) << text;
  EXPECT_NE(text.find("blockIdx.x"), std::string::npos) << text;
  // Both inputs fetched cooperatively: split by the threads of block 0.
  EXPECT_NE(text.find("split pad_temp.cache a0@a1@a2@a3 by the threads of block 0"), std::string::npos) << text;
  EXPECT_NE(text.find("split kernel.cache a0@a1@a2@a3 by the threads of block 0"), std::string::npos) << text;
  ASSERT_EQ(s.blocks.size(), 1u);
  EXPECT_EQ(s.blocks[0].lengths.size(), 4u);  // n, f, y, x
  EXPECT_TRUE(s.parallel.empty());
  // The only vectorize sites: each fetch's 4-wide copies.
  ASSERT_EQ(s.vectorize.size(), 2u);
  EXPECT_TRUE(s.vectorize[0].fetch && s.vectorize[1].fetch);
  EXPECT_TRUE(s.locations.empty());
}

TEST(GpuSketchGeneration, RowReductionsAreReducedByABlocksThreadsOrOneThreadPerRow) {
  // Softmax's two row reductions (max, sum), each either way: 2 x 2.
  const auto sketches = generate_sketches(ops::softmax_workload({6, 100}).dag, opencl());
  ASSERT_EQ(sketches.size(), 4u);
  const std::string both = sketches[0].print();
  EXPECT_EQ(both.find("multi-level"), std::string::npos) << both;
  EXPECT_NE(both.find("cross-thread reduction over k"), std::string::npos) << both;
  EXPECT_EQ(sketches[0].blocks.size(), 2u);
  const std::string neither = sketches[3].print();
  EXPECT_EQ(neither.find("cross-thread"), std::string::npos) << neither;
  EXPECT_NE(neither.find("threadIdx.x"), std::string::npos) << neither;
  EXPECT_TRUE(sketches[3].blocks.empty());
  // Many outputs fill the GPU one thread each: no cross-thread sketch.
  EXPECT_EQ(generate_sketches(ops::softmax_workload({32768, 64}).dag, opencl()).size(), 1u);
}

// A cross-thread reduction lowers into each thread's share, a tree of
// halving steps in shared memory, and thread 0's store; on PoCL it equals
// the reference for thread counts that are and are not powers of two.
TEST(GpuSketchGeneration, CrossThreadReductionsMatchTheReference) {
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const SketchContext ctx = opencl();
  const ops::Workload w = ops::softmax_workload({6, 100});
  const Sketch sketch = generate_sketches(w.dag, ctx)[0];
  std::mt19937_64 rng(1);
  for (const std::vector<int64_t> threads_and_step : {std::vector<int64_t>{4, 5}, {25, 2}, {50, 1}, {100, 1}}) {
    SketchParams p = random_params(sketch, ctx, rng);
    for (auto& t : p.tiles) t = threads_and_step;
    const schedule::Trace trace = instantiate(sketch, p);
    const tir::LoweredFunc f = tir::lower(w.dag, trace, w.op);
    const std::string text = tir::to_string(f);
    EXPECT_NE(text.find(".red"), std::string::npos) << text;
    tir::verify_gpu(tir::split_device_kernels(f), ctx.target.gpu);
    const codegen::test::GpuRun run = codegen::test::run_against_reference(w, f, ctx.target, 3);
    EXPECT_LE(run.max_relative_error, 1e-5) << threads_and_step[0] << " threads\n" << run.source;
  }
}

TEST(GpuSketchGeneration, AReduceLoopOnThreadsWithASpatialLoopInsideIsRefused) {
  const ops::Workload w = ops::dense_workload({4, 64}, {48, 64});
  const schedule::Trace trace =
      schedule::Trace().reorder("T_dense", {"i", "k", "j"}).bind("T_dense", "k", schedule::Annotation::ThreadX);
  try {
    tir::lower(w.dag, trace, w.op);
    ADD_FAILURE() << "lowered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reduce loop k is bound to threadIdx.x with a spatial loop inside"),
              std::string::npos)
        << e.what();
  }
}

TEST(GpuSketchGeneration, RandomBlocksStayWithinTheTargetsThreads) {
  const SketchContext ctx = opencl(" -max_threads_per_block=64");
  std::mt19937_64 rng(3);
  for (const auto& c : cases()) {
    for (const auto& sketch : generate_sketches(c.workload.dag, ctx)) {
      for (int k = 0; k < 20; ++k) {
        const SketchParams p = random_params(sketch, ctx, rng);
        for (size_t b = 0; b < sketch.blocks.size(); ++b)
          EXPECT_LE(block_threads(sketch, p, static_cast<int>(b)), 64) << c.name;
      }
    }
  }
}

// The test: every sketch, randomly annotated, runs on the OpenCL
// device equal to the reference, or the verifier refuses it (shared memory
// over the block's limit) in one line; most run.
TEST(GpuSketchGeneration, EveryRandomlyAnnotatedSketchRunsOnOpenClOrIsRefused) {
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const SketchContext ctx = opencl();
  std::mt19937_64 rng(5);
  int vectorized_fetches = 0, vector_loads = 0;
  for (const auto& c : cases()) {
    int ran = 0, tried = 0;
    for (const auto& sketch : generate_sketches(c.workload.dag, ctx)) {
      for (int k = 0; k < 3; ++k, ++tried) {
        const SketchParams params = random_params(sketch, ctx, rng);
        const schedule::Trace trace = instantiate(sketch, params);
        SCOPED_TRACE(c.name + ": " + trace.dump());
        for (int v : params.vectorize) vectorized_fetches += v;
        const std::optional<tir::LoweredFunc> fits = lowered_if_it_fits(c.workload, trace, ctx);
        if (!fits) continue;
        const tir::LoweredFunc& f = *fits;
        const codegen::test::GpuRun run = codegen::test::run_against_reference(c.workload, f, ctx.target, 9);
        EXPECT_LE(run.max_relative_error, 1e-5) << run.source;
        vector_loads += run.source.find("vload4(") != std::string::npos;
        ++ran;
      }
    }
    EXPECT_GE(ran * 2, tried) << c.name << ": most random annotations should fit a block";
  }
  EXPECT_GT(vectorized_fetches, 0) << "no fetch drew 4-wide copies";
  // Some are aligned (a fetch's fused loop split into 4-wide lanes): one load each.
  EXPECT_GT(vector_loads, 0) << "no 4-wide fetch became one vector load";
}

// A multi-level tiled sketch's reduction step is a pipeline site: on, the
// step's staged fetches (tir/pipeline_fetches.h) load the next step's
// elements between the barriers, after a first load before the loop, and
// the candidate still equals the reference on PoCL; off, or where no fetch
// is staged, the loop is as it was. Its GPU features say which.
TEST(GpuSketchGeneration, PipelinedStepsLoadTheNextStepWhileThisOneComputes) {
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const SketchContext ctx = opencl();
  std::mt19937_64 rng(11);
  int pipelined = 0;
  for (const auto& c : cases()) {
    for (const auto& sketch : generate_sketches(c.workload.dag, ctx)) {
      if (sketch.print().find("multi-level tiling") == std::string::npos) continue;
      ASSERT_EQ(sketch.pipeline.size(), 1u) << sketch.print();
      for (int k = 0; k < 4; ++k) {
        SketchParams params = random_params(sketch, ctx, rng);
        params.vectorize.assign(params.vectorize.size(), 0);  // element fetches: staged (vector copies are not)
        const std::optional<tir::LoweredFunc> fits = lowered_if_it_fits(c.workload, instantiate(sketch, params), ctx);
        if (!fits) continue;
        params.pipeline = {1};
        const schedule::Trace trace = instantiate(sketch, params);
        SCOPED_TRACE(c.name + ": " + trace.dump());
        const tir::LoweredFunc f = tir::lower(c.workload.dag, trace, c.workload.op);
        if (tir::to_string(f).find("(pipelined)") == std::string::npos) continue;  // a step of one: no loop left
        const codegen::test::GpuRun run = codegen::test::run_against_reference(c.workload, f, ctx.target, 9);
        EXPECT_LE(run.max_relative_error, 1e-5) << run.source;
        const std::string step = sketch.pipeline[0].iter;
        // The next step's loads are guarded by the step's bound; the staged
        // registers are declared outside the step's loop.
        const tir::LoweredFunc ready = tir::prepare_for_gpu_codegen(f);
        const std::string text = tir::to_string(ready);
        EXPECT_EQ(text.find("(pipelined)"), std::string::npos) << text;  // serial once pipelined
        const size_t loop = text.find("for " + step + " in 0.."), registers = text.find(".staged[");
        ASSERT_NE(loop, std::string::npos) << text;
        if (registers == std::string::npos) continue;  // no staged fetch: nothing to load ahead
        ++pipelined;
        EXPECT_LT(registers, loop) << "the registers are allocated inside the step\n" << text;
        EXPECT_NE(text.find("if ((" + step + " + 1) < "), std::string::npos) << text;
        EXPECT_EQ(features::gpu_features(f).back(), 1.0f);
        params.pipeline = {0};
        EXPECT_EQ(features::gpu_features(tir::lower(c.workload.dag, instantiate(sketch, params), c.workload.op)).back(),
                  0.0f);
      }
    }
  }
  EXPECT_GE(pipelined, 4) << "few candidates had a staged fetch to pipeline";
}

// Split-K: a long reduction of few outputs also gets sketches with its
// first reduce axis cut into ranges (the most that leave 128 products a
// partial sum, and a quarter of that), whose partial sums are tiled as the
// stage would be and added in the writer's threads; every one, randomly
// annotated, runs on PoCL equal to the reference. Many outputs, or a short
// reduction, get none.
TEST(GpuSketchGeneration, LongReductionsOfFewOutputsAlsoGetSplitKSketches) {
  const SketchContext ctx = opencl();
  const auto pad1 = ops::Conv2dAttrs::symmetric(1, 1);
  const ops::Epilogue bias_relu{.bias = true, .relu = true};
  struct SplitCase {
    std::string name;
    ops::Workload workload;
    std::vector<int64_t> ranges;
  };
  const std::vector<SplitCase> split_cases = {
      // K = 1024: 8 ranges of 128 products, or 2.
      {"dense_bias_relu", ops::dense_workload({4, 1024}, {48, 1024}, bias_relu), {8, 2}},
      // 64 channels x 9 taps: 4 ranges of 16 channels (144 products); a quarter of 4 is no split.
      {"conv2d_nchw_bias_relu", ops::conv2d_nchw_workload({1, 64, 6, 6}, {16, 64, 3, 3}, pad1, bias_relu), {4}},
      // The convolution as one product: written out by its images' epilogue.
      {"conv2d_implicit_gemm", ops::conv2d_nchw_implicit_gemm_workload({1, 64, 6, 6}, {16, 64, 3, 3}, pad1, bias_relu),
       {4}},
      {"batch_matmul", ops::batch_matmul_workload({2, 12, 512}, {2, 20, 512}), {4}},
  };
  EXPECT_EQ(split_k_ranges(4608, 4608), (std::vector<int64_t>{16, 4}));
  EXPECT_EQ(split_k_ranges(512, 4608), (std::vector<int64_t>{16, 4}));  // channels of a 3 x 3 convolution
  EXPECT_EQ(split_k_ranges(768, 768), (std::vector<int64_t>{4}));
  EXPECT_TRUE(split_k_ranges(255, 255).empty());
  EXPECT_TRUE(split_k_ranges(3, 1 << 20).empty());  // no power of two divides 3
  const bool opencl_here = runtime::opencl_unavailable_reason().empty();
  std::mt19937_64 rng(7);
  for (const SplitCase& c : split_cases) {
    std::vector<int64_t> ranges;
    int ran = 0, tried = 0;
    for (const Sketch& sketch : generate_sketches(c.workload.dag, ctx)) {
      if (!is_split_k_sketch(sketch)) continue;
      const std::string text = sketch.print();
      const size_t at = text.find("split-K into ");
      ASSERT_NE(at, std::string::npos) << text;
      ranges.push_back(std::stoll(text.substr(at + 13)));
      EXPECT_NE(text.find("rfactor"), std::string::npos) << text;
      // The partial sums tiled, never one thread each.
      EXPECT_NE(text.find(".rf.local: GPU multi-level tiling"), std::string::npos) << text;
      for (int k = 0; k < 4 && opencl_here; ++k, ++tried) {
        const schedule::Trace trace = instantiate(sketch, random_params(sketch, ctx, rng));
        SCOPED_TRACE(c.name + ": " + trace.dump());
        const std::optional<tir::LoweredFunc> fits = lowered_if_it_fits(c.workload, trace, ctx);
        if (!fits) continue;
        const tir::LoweredFunc& f = *fits;
        // The partial sums are a buffer of their own, which a kernel adds up.
        EXPECT_GE(tir::split_device_kernels(f).kernels.size(), 2u);
        EXPECT_NE(tir::to_string(f).find(".rf["), std::string::npos) << tir::to_string(f);
        const codegen::test::GpuRun run = codegen::test::run_against_reference(c.workload, f, ctx.target, 9);
        EXPECT_LE(run.max_relative_error, 1e-5) << run.source;
        ++ran;
      }
    }
    std::sort(ranges.rbegin(), ranges.rend());
    // Each split once per way the rules after it tile the partial sums.
    ranges.erase(std::unique(ranges.begin(), ranges.end()), ranges.end());
    EXPECT_EQ(ranges, c.ranges) << c.name;
    // (Random steps of a long reduction often stage more than a block's
    // 48 KB: the verifier refuses those, in one line.)
    EXPECT_GE(ran * 4, tried) << c.name << ": a quarter of the random annotations should fit a block";
  }
  // Short reductions (72 products) and many outputs get none.
  for (const auto& c : cases())
    for (const Sketch& sketch : generate_sketches(c.workload.dag, ctx))
      EXPECT_FALSE(is_split_k_sketch(sketch)) << c.name;
  const auto wide = ops::dense_workload({1024, 1024}, {1024, 1024});
  for (const Sketch& sketch : generate_sketches(wide.dag, ctx)) EXPECT_FALSE(is_split_k_sketch(sketch));
}

// The search hands out only candidates the device can run.
TEST(GpuSketchPolicy, BatchesHoldOnlyVerifiedCandidates) {
  const SketchContext ctx = opencl(" -max_threads_per_block=128 -max_shared_memory_per_block=4096");
  const ops::Workload w = ops::conv2d_nchw_workload({1, 16, 14, 14}, {32, 16, 3, 3}, ops::Conv2dAttrs::symmetric(1, 1));
  RandomCostModel model;
  SketchPolicy policy(w.dag, ctx, model, EvolutionOptions{.population = 32, .generations = 1}, 1);
  const std::vector<Candidate> batch = policy.next_batch(8);
  ASSERT_FALSE(batch.empty());
  for (const auto& c : batch) {
    const tir::LoweredFunc f = tir::lower(w.dag, c.trace, w.op);
    EXPECT_NO_THROW(tir::verify_gpu(tir::split_device_kernels(f), ctx.target.gpu)) << c.trace.dump();
  }
}

}  // namespace
}  // namespace tessera::autoschedule
