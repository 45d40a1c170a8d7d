// conv2d as one matrix product (ops/conv2d_implicit_gemm.h), in NCHW and
// NHWC: the DAG, interpreted and compiled for this host by the default
// schedule, equals the direct convolution's reference, its matrices padded
// to whole 16 x 16 tiles where the convolution's are not.
#include "ops/conv2d_implicit_gemm.h"

#include <gtest/gtest.h>

#include "../codegen/gpu_run_util.h"
#include "codegen/llvm_codegen.h"
#include "codegen/module.h"
#include "ops/workloads.h"
#include "ops_test_util.h"
#include "runtime/opencl_device.h"
#include "schedule/default_schedule.h"
#include "schedule/gpu_schedule.h"
#include "tessera/error.h"
#include "tir/lower.h"

namespace tessera::ops {
namespace {

struct Case {
  Shape input, weight;
  Conv2dAttrs attrs;
};

// Whole tiles; every matrix ragged (24 channels, 27 taps, 49 positions);
// stride 2 with uneven padding over two images; a 1x1; dilation 2.
std::vector<Case> cases() {
  Conv2dAttrs uneven = Conv2dAttrs::symmetric(2, 0);
  uneven.pad_top = 2, uneven.pad_left = 1, uneven.pad_bottom = 0, uneven.pad_right = 1;
  return {
      {{1, 16, 8, 8}, {16, 16, 3, 3}, Conv2dAttrs::symmetric(1, 1)},
      {{1, 3, 7, 7}, {24, 3, 3, 3}, Conv2dAttrs::symmetric(1, 1)},
      {{2, 8, 9, 11}, {16, 8, 3, 3}, uneven},
      {{1, 32, 7, 7}, {48, 32, 1, 1}, Conv2dAttrs::symmetric(1, 0)},
      {{1, 4, 9, 9}, {8, 4, 3, 3}, Conv2dAttrs::symmetric(1, 2, 2)},
  };
}

// The case in NHWC: data (N, H, W, C), weight HWIO.
Workload nhwc_workload(const Case& c) {
  return conv2d_nhwc_implicit_gemm_workload({c.input[0], c.input[2], c.input[3], c.input[1]},
                                            {c.weight[2], c.weight[3], c.weight[1], c.weight[0]}, c.attrs,
                                            Epilogue{.bias = true, .relu = true});
}

// Both layouts' workloads of every case.
std::vector<Workload> workloads() {
  std::vector<Workload> out;
  for (const Case& c : cases()) {
    out.push_back(conv2d_nchw_implicit_gemm_workload(c.input, c.weight, c.attrs, Epilogue{.bias = true, .relu = true}));
    out.push_back(nhwc_workload(c));
  }
  return out;
}

TEST(Conv2dImplicitGemm, InterpretedAndCompiledItEqualsTheDirectConvolution) {
  for (const Case& c : cases()) {
    const Shape nchw = conv2d_nchw_output_shape(c.input, c.weight, c.attrs);
    EXPECT_EQ(nhwc_workload(c).dag.outputs()[0]->shape, (Shape{nchw[0], nchw[2], nchw[3], nchw[1]}));
  }
  for (const Workload& w : workloads()) {
    SCOPED_TRACE(w.op + " input " + shape_to_string(w.dag.placeholders()[0]->shape));
    const auto inputs = test::random_inputs(w);
    std::vector<float> want(w.dag.outputs()[0]->num_elements());
    w.reference(test::pointers(inputs), want.data());
    EXPECT_LT(test::max_relative_error(test::DagInterpreter().run(w.dag, test::pointers(inputs)), want), 1e-5);

    const tir::LoweredFunc f = tir::lower(w.dag, schedule::default_schedule(w.dag), "kernel");
    const codegen::Module m = codegen::Module::load_object(codegen::compile_to_object(f, target::Target::host()));
    std::vector<float> got(want.size(), -7.0f);
    std::vector<void*> args;
    for (const auto& v : inputs) args.push_back(const_cast<float*>(v.data()));
    args.push_back(got.data());
    m.function("kernel")(args.data());
    EXPECT_LT(test::max_relative_error(got, want), 1e-5);
  }
}

// Untuned on a GPU: the hand-written schedule tiles the product as it
// tiles a dense (registers, shared operand slices), then writes the output.
TEST(Conv2dImplicitGemm, TheHandWrittenGpuScheduleTilesTheProductAndMatchesTheReference) {
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const target::Target opencl = target::Target::parse("opencl");
  for (const Workload& w : workloads()) {
    SCOPED_TRACE(w.op + " input " + shape_to_string(w.dag.placeholders()[0]->shape));
    const schedule::Trace trace = schedule::best_gpu_schedule(w.dag, {1024, 48 * 1024});
    EXPECT_NE(trace.dump().find("conv_product"), std::string::npos);
    EXPECT_NE(trace.dump().find("\"scope\":\"shared\""), std::string::npos) << trace.dump();
    const tir::LoweredFunc f = tir::lower(w.dag, trace, w.op);
    EXPECT_LE(codegen::test::run_against_reference(w, f, opencl, 5).max_relative_error, 1e-5);
  }
}

TEST(Conv2dImplicitGemm, TheProductIsPaddedToWholeTilesAndGroupsAreRefused) {
  const ir::Tensor data = ir::placeholder({1, 3, 7, 7}, "data"), weight = ir::placeholder({24, 3, 3, 3}, "weight");
  const ir::Tensor out = conv2d_nchw_implicit_gemm(data, weight, Conv2dAttrs::symmetric(1, 1));
  const ir::ComputeDAG dag({out});
  ir::Tensor product;
  for (const auto& t : dag.tensors())
    if (t->tag == "conv2d_nchw_gemm") product = t;
  ASSERT_TRUE(product);
  EXPECT_EQ(product->shape, (Shape{32, 64}));           // 24 channels, 49 positions
  EXPECT_EQ(product->reduce_axes[0].extent, 32);        // 27 taps
  EXPECT_EQ(out->attrs.at("implicit_gemm"), "1");
  Conv2dAttrs grouped = Conv2dAttrs::symmetric(1, 1);
  grouped.groups = 3;
  EXPECT_THROW(conv2d_nchw_implicit_gemm(ir::placeholder({1, 6, 7, 7}, "d"), ir::placeholder({6, 2, 3, 3}, "w"), grouped),
               Error);
}

// In NHWC the product is positions x channels, its operands rows of
// channels: the window (Q', K') and the HWIO weight read as (K', F').
TEST(Conv2dImplicitGemm, InNhwcTheProductIsPositionsByChannels) {
  const ir::Tensor data = ir::placeholder({1, 7, 7, 3}, "data"), weight = ir::placeholder({3, 3, 3, 24}, "weight");
  const ir::Tensor out = conv2d_nhwc_implicit_gemm(data, weight, Conv2dAttrs::symmetric(1, 1));
  EXPECT_EQ(out->shape, (Shape{1, 7, 7, 24}));
  EXPECT_EQ(out->tag, "conv2d_nhwc_implicit_gemm");
  const ir::ComputeDAG dag({out});
  ir::Tensor product;
  for (const auto& t : dag.tensors())
    if (t->tag == "conv2d_nhwc_gemm") product = t;
  ASSERT_TRUE(product);
  EXPECT_EQ(product->shape, (Shape{64, 32}));     // 49 positions, 24 channels
  EXPECT_EQ(product->reduce_axes[0].extent, 32);  // 27 taps
  EXPECT_EQ(product->inputs()[0]->shape, (Shape{64, 32}));
  EXPECT_EQ(product->inputs()[1]->shape, (Shape{32, 32}));
  Conv2dAttrs grouped = Conv2dAttrs::symmetric(1, 1);
  grouped.groups = 3;
  EXPECT_THROW(
      conv2d_nhwc_implicit_gemm(ir::placeholder({1, 7, 7, 6}, "d"), ir::placeholder({3, 3, 2, 6}, "w"), grouped),
      Error);
}

// The stored weight is OHWI: element (o, c, y, x) of the OIHW weight at
// ((o*KH + y)*KW + x)*I + c; and back.
TEST(Conv2dImplicitGemm, TheWeightIsStoredOhwiAndReadBack) {
  const Shape oihw = {3, 4, 2, 5};
  std::vector<float> w(3 * 4 * 2 * 5);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i);
  EXPECT_EQ(implicit_gemm_weight_shape(oihw), (Shape{3, 2, 5, 4}));
  const std::vector<float> ohwi = implicit_gemm_weight(w.data(), oihw);
  const int64_t o = 2, c = 3, y = 1, x = 4;
  EXPECT_EQ(ohwi[((o * 2 + y) * 5 + x) * 4 + c], w[((o * 4 + c) * 2 + y) * 5 + x]);
  EXPECT_EQ(oihw_of_implicit_gemm_weight(ohwi.data(), implicit_gemm_weight_shape(oihw)), w);
  EXPECT_THROW(implicit_gemm_weight_shape({3, 4, 2}), Error);
}

}  // namespace
}  // namespace tessera::ops
