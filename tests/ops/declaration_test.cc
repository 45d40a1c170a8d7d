// Compute declarations: structure (stage names, tags, padding stages), printouts,
// and values — every workload's DAG, evaluated element by element by the test
// interpreter, equals its independently written reference.
#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ops/conv2d.h"
#include "ops/dense.h"
#include "ops/elementwise.h"
#include "ops/layout.h"
#include "ops/registry.h"
#include "ops/workloads.h"
#include "ops_cases.h"
#include "ops_test_util.h"

namespace tessera::ops {
namespace {

using test::DagInterpreter;
using test::max_relative_error;
using test::pointers;
using test::random_inputs;

std::vector<std::string> compute_names(const ir::ComputeDAG& dag) {
  std::vector<std::string> names;
  for (const auto& t : dag.tensors())
    if (!t->is_placeholder()) names.push_back(t->name);
  return names;
}

std::vector<std::string> tags(const ir::ComputeDAG& dag) {
  std::vector<std::string> out;
  for (const auto& t : dag.tensors())
    if (!t->is_placeholder()) out.push_back(t->tag);
  return out;
}

TEST(OpsDeclaration, Conv2dStagesAndPrintout) {
  Workload w = conv2d_nchw_workload({1, 3, 7, 7}, {4, 3, 3, 3}, Conv2dAttrs::symmetric(2, 1), {true, true});
  EXPECT_EQ(compute_names(w.dag), (std::vector<std::string>{"pad_temp", "conv2d_nchw", "T_add", "T_relu"}));
  EXPECT_EQ(tags(w.dag), (std::vector<std::string>{"pad", "conv2d_nchw", "broadcast", "elemwise"}));
  const auto& conv = w.dag.tensors()[w.dag.index_of("conv2d_nchw")];
  EXPECT_EQ(ir::to_string(conv),
            "conv2d_nchw(nn, ff, yy, xx) += (pad_temp[nn, rc, ((yy*2) + ry), ((xx*2) + rx)]*kernel[ff, rc, ry, rx])");
  EXPECT_EQ(conv->attrs.at("strides"), "2,2");
  EXPECT_EQ(conv->shape, (Shape{1, 4, 4, 4}));

  // Without padding there is no padding stage, and stride 1 prints no "*1".
  Workload plain = conv2d_nchw_workload({1, 3, 7, 7}, {4, 3, 3, 3}, Conv2dAttrs{});
  EXPECT_EQ(compute_names(plain.dag), (std::vector<std::string>{"conv2d_nchw"}));
  EXPECT_EQ(ir::to_string(plain.dag.outputs()[0]),
            "conv2d_nchw(nn, ff, yy, xx) += (data[nn, rc, (yy + ry), (xx + rx)]*kernel[ff, rc, ry, rx])");
}

TEST(OpsDeclaration, NhwcAndNchwcUseTvmNamesAndSplitInputChannel) {
  Workload nhwc = conv2d_nhwc_workload({1, 8, 8, 4}, {3, 3, 4, 8}, Conv2dAttrs::symmetric(1, 1));
  EXPECT_EQ(compute_names(nhwc.dag), (std::vector<std::string>{"PaddedInput", "Conv2dOutput"}));
  EXPECT_EQ(nhwc.dag.outputs()[0]->tag, "conv2d_nhwc");

  Workload nchwc = conv2d_nchwc_workload({1, 2, 8, 8, 4}, {4, 2, 3, 3, 4, 2}, Conv2dAttrs::symmetric(1, 1));
  EXPECT_EQ(compute_names(nchwc.dag), (std::vector<std::string>{"data_pad", "conv2d_NCHWc"}));
  const auto& out = nchwc.dag.outputs()[0];
  EXPECT_EQ(out->tag, "conv2d_nchwc");
  EXPECT_EQ(out->shape, (Shape{1, 4, 8, 8, 2}));
  std::vector<std::string> reduce;
  for (const auto& a : out->reduce_axes) reduce.push_back(a.var.name());
  EXPECT_EQ(reduce, (std::vector<std::string>{"ic_outer", "ry", "rx", "ic_inner"}));
  EXPECT_EQ(out->attrs.at("ic_bn"), "4");
  EXPECT_EQ(out->attrs.at("oc_bn"), "2");
}

// An unpadded 1x1 conv runs over its output positions flattened (same memory
// as the 5-D output); with padding or a wider window it keeps rows and columns.
TEST(OpsDeclaration, UnpaddedNchwc1x1FlattensItsOutputPositions) {
  Workload flat = conv2d_nchwc_workload({1, 2, 13, 11, 4}, {4, 2, 1, 1, 4, 2}, Conv2dAttrs::symmetric(2, 0));
  const auto& out = flat.dag.outputs()[0];
  EXPECT_EQ(out->shape, (Shape{1, 4, 1, 7 * 6, 2}));
  EXPECT_EQ(out->attrs.at("spatial"), "flattened");
  EXPECT_EQ(ir::to_string(out),
            "conv2d_NCHWc(n, oc_chunk, oh, ohw, oc_block) += (data[n, ic_outer, ((floordiv(ohw, 6)*2) + ry), "
            "((floormod(ohw, 6)*2) + rx), ic_inner]*kernel[oc_chunk, ic_outer, ry, rx, ic_inner, oc_block])");
  EXPECT_TRUE(nchwc_flattens_spatial({4, 2, 1, 1, 4, 2}, Conv2dAttrs{}));
  // 1x1 padded by 1 on 8x8: 10x10; 3x3 unpadded: 6x6.
  for (const auto& [weight, pad, size] :
       {std::tuple{Shape{4, 2, 1, 1, 4, 2}, 1, 10}, std::tuple{Shape{4, 2, 3, 3, 4, 2}, 0, 6}}) {
    EXPECT_FALSE(nchwc_flattens_spatial(weight, Conv2dAttrs::symmetric(1, pad)));
    Workload kept = conv2d_nchwc_workload({1, 2, 8, 8, 4}, weight, Conv2dAttrs::symmetric(1, pad));
    EXPECT_EQ(kept.dag.outputs()[0]->shape, (Shape{1, 4, size, size, 2}));
    EXPECT_EQ(kept.dag.outputs()[0]->attrs.count("spatial"), 0u);
  }
}

TEST(OpsDeclaration, RepeatedStagesGetUniqueNames) {
  ir::Tensor x = ir::placeholder({2, 8}, "data");
  ir::Tensor b = ir::placeholder({8}, "bias");
  ir::Tensor y = add(relu(add(bias_add(x, b, 1), x)), x);
  ir::ComputeDAG dag({y});
  EXPECT_EQ(compute_names(dag), (std::vector<std::string>{"T_add", "T_add_1", "T_relu", "T_add_2"}));
}

TEST(OpsDeclaration, SoftmaxHasFourStagesLikeTvm) {
  Workload w = softmax_workload({1, 1000});
  EXPECT_EQ(compute_names(w.dag), (std::vector<std::string>{"T_softmax_maxelem", "T_softmax_exp",
                                                              "T_softmax_expsum", "T_softmax_norm"}));
  EXPECT_EQ(ir::to_string(w.dag.tensors()[1]), "T_softmax_maxelem(i0) max= data[i0, k]");
}

TEST(OpsDeclaration, PoolingStagesAndTags) {
  Workload avg = avg_pool2d_workload({1, 2, 7, 7}, Pool2dAttrs::symmetric(3, 2, 1));
  EXPECT_EQ(compute_names(avg.dag), (std::vector<std::string>{"pad_temp", "tensor", "tensor_1"}));
  EXPECT_EQ(tags(avg.dag), (std::vector<std::string>{"pad", "pool_sum", "pool_avg"}));
  Workload max = max_pool2d_workload({1, 2, 7, 7}, Pool2dAttrs::symmetric(2, 2, 0));
  EXPECT_EQ(tags(max.dag), (std::vector<std::string>{"pool_max"}));
  Workload global = global_avg_pool2d_workload({1, 2, 7, 7});
  EXPECT_EQ(tags(global.dag), (std::vector<std::string>{"global_pool_sum", "global_pool_avg"}));
  EXPECT_EQ(global.dag.outputs()[0]->shape, (Shape{1, 2, 1, 1}));
}

TEST(OpsDeclaration, FlopCountOfConvIsTwoPerMultiplyAdd) {
  Workload w = conv2d_nchw_workload({1, 3, 7, 7}, {4, 3, 3, 3}, Conv2dAttrs{});
  EXPECT_DOUBLE_EQ(w.dag.flop_count(), 2.0 * 4 * 5 * 5 * 3 * 3 * 3);
}

TEST(OpsDeclaration, EveryRegistryOpMatchesItsReference) {
  for (const auto& c : test::registry_cases()) {
    SCOPED_TRACE(test::describe(c));
    Workload w = make_workload(c.op, c.args);
    auto inputs = random_inputs(w);
    std::vector<float> expected(w.dag.outputs()[0]->num_elements());
    w.reference(pointers(inputs), expected.data());
    std::vector<float> got;
    ASSERT_NO_THROW(got = DagInterpreter().run(w.dag, pointers(inputs)));
    EXPECT_LT(max_relative_error(got, expected), 1e-5);
  }
}

TEST(OpsDeclaration, NchwcWorkloadEqualsNchwOnPackedData) {
  // The CLI's path: NCHW data and OIHW weights converted with the registry helpers.
  OpArgs a = test::conv_args({1, 8, 9, 9}, {16, 8, 3, 3}, 2, 1, "NCHWc");
  OpArgs nchw_args = a;
  nchw_args.layout = "NCHW";
  Workload packed = make_workload("conv2d", a), plain = make_workload("conv2d", nchw_args);
  auto x = test::random_data(num_elements(a.input), 21), k = test::random_data(num_elements(a.weight), 22);
  std::vector<float> expected(plain.dag.outputs()[0]->num_elements()), got(expected.size());
  plain.reference({x.data(), k.data()}, expected.data());
  auto px = conv2d_data_to_layout(a, x.data()), pk = conv2d_weight_to_layout(a, k.data());
  packed.reference({px.data(), pk.data()}, got.data());
  EXPECT_LT(max_relative_error(conv2d_output_to_nchw(a, got.data()), expected), 1e-6);
  EXPECT_EQ(nchwc_blocking(a).ic_bn, 8);
  EXPECT_EQ(nchwc_blocking(a).oc_bn, 16);
}

}  // namespace
}  // namespace tessera::ops
