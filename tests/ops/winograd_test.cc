// conv2d by Winograd in NCHW[x]c and in NCHW: the transforms (weight,
// reference algorithm) agree with the direct convolution, the registry routes
// conv2d_winograd and conv2d_nchw_winograd to them with clear errors, and
// convert_layout (CPUs) and choose_nchw_winograd (GPUs) mark the convolutions
// worth it.
#include "ops/winograd.h"

#include <gtest/gtest.h>

#include "compile/build.h"
#include "target/target.h"
#include "graph/model_source.h"
#include "ops/layout.h"
#include "ops/reference.h"
#include "ops/registry.h"
#include "ops_test_util.h"
#include "tessera/error.h"

namespace tessera::ops {
namespace {

struct WinogradCase {
  Shape input, weight;
  Conv2dAttrs attrs;
  int64_t ib, ob;
};

Conv2dAttrs padded(int64_t top, int64_t left, int64_t bottom, int64_t right) {
  Conv2dAttrs a;
  a.pad_top = top, a.pad_left = left, a.pad_bottom = bottom, a.pad_right = right;
  return a;
}

// Whole tiles, ragged edges, no padding, uneven padding, two images.
const std::vector<WinogradCase> kCases = {
    {{1, 16, 8, 8}, {8, 16, 3, 3}, Conv2dAttrs::symmetric(1, 1), 8, 8},
    {{2, 8, 7, 9}, {16, 8, 3, 3}, Conv2dAttrs::symmetric(1, 1), 4, 8},
    {{1, 8, 6, 11}, {8, 8, 3, 3}, Conv2dAttrs::symmetric(1, 0), 8, 4},
    {{1, 4, 5, 5}, {4, 4, 3, 3}, padded(2, 0, 1, 1), 4, 4},
};

TEST(Winograd, ReferenceWithTransformedWeightsEqualsTheDirectConvolution) {
  for (int64_t m : {2, 4}) {
    for (const WinogradCase& c : kCases) {
      SCOPED_TRACE("F(" + std::to_string(m) + ") input " + shape_to_string(c.input));
      const std::vector<float> x = test::random_data(num_elements(c.input), 1);
      const std::vector<float> w = test::random_data(num_elements(c.weight), 2);
      const Shape out = conv2d_nchw_output_shape(c.input, c.weight, c.attrs);
      std::vector<float> want(num_elements(out));
      reference::conv2d_nchw(x.data(), c.input, w.data(), c.weight, c.attrs, want.data());

      const std::vector<float> packed_w = pack_oihw_to_oihwio(w.data(), c.weight, c.ib, c.ob);
      const std::vector<float> u = winograd_transform_weight(packed_w.data(), oihwio_shape(c.weight, c.ib, c.ob), m);
      const Shape u_shape = winograd_weight_shape(c.weight, c.ib, c.ob, m);
      ASSERT_EQ(static_cast<int64_t>(u.size()), num_elements(u_shape));
      const Shape data_shape = nchwc_shape(c.input, c.ib);
      const std::vector<float> data = pack_nchw_to_nchwc(x.data(), c.input, c.ib);
      const Shape got_shape = conv2d_winograd_nchwc_output_shape(data_shape, u_shape, c.attrs, m);
      ASSERT_EQ(got_shape, (Shape{out[0], out[1] / c.ob, out[2], out[3], c.ob}));
      std::vector<float> got(num_elements(got_shape));
      reference::conv2d_winograd_nchwc(data.data(), data_shape, u.data(), u_shape, c.attrs, m, got.data());
      EXPECT_LE(test::max_relative_error(unpack_nchwc_to_nchw(got.data(), got_shape), want), 1e-5);
    }
  }
}

// The NCHW form (GPU targets): the OIHW weight transformed to (alpha^2, O,
// C), the algorithm against the direct convolution's reference.
TEST(Winograd, NchwFormWithTransformedWeightsEqualsTheDirectConvolution) {
  for (int64_t m : {2, 4}) {
    for (const WinogradCase& c : kCases) {
      SCOPED_TRACE("F(" + std::to_string(m) + ") input " + shape_to_string(c.input));
      const std::vector<float> x = test::random_data(num_elements(c.input), 3);
      const std::vector<float> w = test::random_data(num_elements(c.weight), 4);
      const Shape out = conv2d_nchw_output_shape(c.input, c.weight, c.attrs);
      std::vector<float> want(num_elements(out));
      reference::conv2d_nchw(x.data(), c.input, w.data(), c.weight, c.attrs, want.data());
      const Shape u_shape = winograd_nchw_weight_shape(c.weight, m);
      ASSERT_EQ(u_shape, (Shape{(m + 2) * (m + 2), c.weight[0], c.weight[1]}));
      const std::vector<float> u = winograd_transform_nchw_weight(w.data(), c.weight, m);
      ASSERT_EQ(static_cast<int64_t>(u.size()), num_elements(u_shape));
      ASSERT_EQ(conv2d_winograd_nchw_output_shape(c.input, u_shape, c.attrs, m), out);
      std::vector<float> got(num_elements(out));
      reference::conv2d_winograd_nchw(x.data(), c.input, u.data(), u_shape, c.attrs, m, got.data());
      EXPECT_LE(test::max_relative_error(got, want), 1e-5);
    }
  }
}

OpArgs winograd_args(Shape input, Shape weight, int64_t stride, int64_t tile) {
  OpArgs a;
  a.input = std::move(input);
  a.weight = std::move(weight);
  a.stride = stride;
  a.pad = 1;
  a.winograd_tile = tile;
  return a;
}

void expect_error(const OpArgs& a, const std::string& says, const std::string& op = "conv2d_winograd") {
  try {
    make_workload(op, a);
    FAIL() << "expected an error saying " << says;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(Winograd, RegistryDeclaresItAndRefusesWhatItCannotCompute) {
  const Workload w = make_workload("conv2d_winograd", winograd_args({1, 16, 7, 7}, {32, 16, 3, 3}, 1, 4));
  ASSERT_EQ(w.dag.placeholders().size(), 2u);
  const Shape transformed{36, 2, 1, 16, 16}, packed{1, 1, 7, 7, 16};  // (alpha^2, O/ob, I/ib, ib, ob)
  for (const ir::Tensor& p : w.dag.placeholders()) EXPECT_EQ(p->shape, p->name == "kernel" ? transformed : packed);
  EXPECT_EQ(w.dag.outputs()[0]->shape, (Shape{1, 2, 7, 7, 16}));
  expect_error(winograd_args({1, 16, 7, 7}, {32, 16, 3, 3}, 2, 4), "stride 1");
  expect_error(winograd_args({1, 16, 7, 7}, {32, 16, 5, 5}, 1, 4), "3x3");
  expect_error(winograd_args({1, 16, 7, 7}, {32, 16, 3, 3}, 1, 3), "2 or 4");
  expect_error(winograd_args({1, 16, 7, 7}, {32, 8, 3, 3}, 1, 4), "expects");
  const ir::Tensor data = ir::placeholder({1, 2, 7, 7, 8}, "data");
  const ir::Tensor wrong = ir::placeholder({16, 2, 2, 8, 8}, "kernel");  // transformed for tile 2, not 4
  EXPECT_THROW(conv2d_winograd_nchwc(data, wrong, Conv2dAttrs::symmetric(1, 1), 4), Error);
}

TEST(Winograd, RegistryDeclaresTheNchwFormAndRefusesWhatItCannotCompute) {
  const Workload w = make_workload("conv2d_nchw_winograd", winograd_args({1, 16, 7, 7}, {32, 16, 3, 3}, 1, 4));
  ASSERT_EQ(w.dag.placeholders().size(), 2u);
  const Shape transformed{36, 32, 16}, data{1, 16, 7, 7};  // (alpha^2, O, C)
  for (const ir::Tensor& p : w.dag.placeholders()) EXPECT_EQ(p->shape, p->name == "kernel" ? transformed : data);
  EXPECT_EQ(w.dag.outputs()[0]->shape, (Shape{1, 32, 7, 7}));
  EXPECT_EQ(w.dag.outputs()[0]->tag, "conv2d_winograd_nchw");
  expect_error(winograd_args({1, 16, 7, 7}, {32, 16, 3, 3}, 2, 4), "stride 1", "conv2d_nchw_winograd");
  expect_error(winograd_args({1, 16, 7, 7}, {32, 16, 1, 1}, 1, 4), "3x3", "conv2d_nchw_winograd");
  expect_error(winograd_args({1, 16, 7, 7}, {32, 16, 3, 3}, 1, 6), "2 or 4", "conv2d_nchw_winograd");
  const ir::Tensor x = ir::placeholder({1, 8, 7, 7}, "data");
  EXPECT_THROW(conv2d_winograd_nchw(x, ir::placeholder({16, 8, 8}, "kernel"), Conv2dAttrs::symmetric(1, 1), 4), Error);
  EXPECT_THROW(conv2d_winograd_nchw(x, ir::placeholder({36, 8, 4}, "kernel"), Conv2dAttrs::symmetric(1, 1), 4), Error);
}

// On a GPU target, choose_nchw_winograd marks the same 13 convolutions of
// ResNet-18 (in NCHW) when asked, none by default, and none that are
// computed as matrix products.
TEST(Winograd, GpuTargetsMarkResNetsConvolutionsInNchwOnlyWhenAsked) {
  const graph::Graph model = graph::load_model("resnet-18");
  const target::Target opencl = target::Target::parse("opencl");
  auto marked = [&](bool implicit_gemm, bool gpu_winograd) {
    int count = 0;
    const graph::Graph optimized = build::optimize_for_target(model, opencl, {}, true, false, implicit_gemm, gpu_winograd);
    for (const graph::Node& n : optimized.nodes()) {
      if (n.op != graph::Op::kConv2d || n.attrs_as<graph::Conv2dAttrs>().winograd_tile == 0) continue;
      EXPECT_EQ(n.attrs_as<graph::Conv2dAttrs>().data_layout, "NCHW") << n.name;
      ++count;
    }
    return count;
  };
  EXPECT_EQ(marked(false, true), 13);
  EXPECT_EQ(marked(false, false), 0);
  EXPECT_EQ(marked(true, true), 0);
}

// ResNet-18's 3x3 stride-1 convolutions (four in layer1, three in layer2 and
// layer3; not layer4's, whose 7x7 images reuse the transformed weights too
// little, graph::winograd_reuses_weights) run as F(4x4, 3x3); its stem,
// strided and 1x1 convolutions directly; none with the option off.
TEST(Winograd, ConvertLayoutMarksResNetsThreeByThreeStrideOneConvolutions) {
  const graph::Graph model = graph::load_model("resnet-18");
  const target::Target avx2 = target::Target::parse("llvm -mcpu=haswell");
  auto marked = [&](bool winograd) {
    int count = 0;
    // Kept in a variable: a range-for over a temporary's nodes() would read a destroyed graph.
    const graph::Graph optimized = build::optimize_for_target(model, avx2, {}, winograd);
    for (const graph::Node& n : optimized.nodes()) {
      if (n.op != graph::Op::kConv2d) continue;
      const auto& a = n.attrs_as<graph::Conv2dAttrs>();
      if (a.winograd_tile == 0) continue;
      EXPECT_EQ(a.winograd_tile, 4);
      EXPECT_EQ(a.stride_h, 1) << n.name;
      ++count;
    }
    return count;
  };
  EXPECT_EQ(marked(true), 10);
  EXPECT_EQ(marked(false), 0);
}

}  // namespace
}  // namespace tessera::ops
