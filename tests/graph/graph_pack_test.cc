// graph_pack: a network quantized with power-of-two scales, packed between
// its first max pooling and its global average pooling, computes the same
// integers as before packing (the interpreter runs conv2d_packed's reference
// against qlinear_conv2d's and qlinear_add's), with every convolution of
// the region packed, residual adds fused and the layouts transformed only
// where values enter or leave the region.
#include "graph/graph_pack.h"

#include <gtest/gtest.h>

#include <set>

#include "graph/builder.h"
#include "graph/interpreter.h"
#include "graph/passes.h"
#include "graph/quantize_network.h"
#include "graph/zoo.h"
#include "ops/conv2d.h"
#include "ops/conv2d_packed.h"
#include "ops/pooling.h"
#include "tessera/error.h"
#include "testing/small_resnet.h"

namespace tessera::graph {
namespace {

// The logits differ from class to class: the integers that reach them are not all saturated or zero.
int distinct_values(const runtime::NDArray& a) {
  std::set<float> v(a.data(), a.data() + a.size());
  return static_cast<int>(v.size());
}

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += op_name(node.op) == op;
  return n;
}

Graph quantized(const Graph& model) {
  QuantizeOptions o;
  o.global_scale = 8.0, o.power_of_two = true;  // seed 003's; the stem stays float (skip_layers {0})
  return quantize_network(optimize(model, PassOptions{.block = 0, .winograd = false}), {}, o);
}

std::vector<runtime::NDArray> run(const Graph& g, uint64_t seed) {
  std::vector<runtime::NDArray> in;
  in.emplace_back(g.node(g.input_ids()[0]).type.shape);
  in.back().fill_random(seed);
  return interpret(g, in);
}

TEST(GraphPack, PackedNetworkComputesTheSameIntegersAsTheQuantizedOne) {
  const Graph q = quantized(testing::small_resnet());
  GraphPackReport report;
  const Graph packed = graph_pack(q, {}, &report);
  EXPECT_EQ(report.convolutions, 5);
  EXPECT_EQ(report.residual_adds, 2);
  EXPECT_TRUE(report.not_packed.empty());
  EXPECT_EQ(count(packed, "conv2d_packed"), 5);
  EXPECT_EQ(count(packed, "qlinear_conv2d"), 0);
  EXPECT_EQ(count(packed, "qlinear_add"), 0);
  // One transform into the region (the pooled stem) and one out of it (the last block's sum).
  EXPECT_EQ(count(packed, "layout_transform"), 2);
  int residuals = 0;
  for (const Node& n : packed.nodes()) {
    if (op_name(n.op) != "conv2d_packed") continue;
    const auto& a = n.attrs_as<ops::Conv2dPackedAttrs>();
    EXPECT_EQ(n.type.shape, a.output_shape());
    EXPECT_EQ(n.type.dtype, DataType::kInt8);
    EXPECT_TRUE(a.bias);
    if (a.residual) {
      ++residuals;
      EXPECT_EQ(a.residual_clip_min, 0) << n.name;  // the block's ReLU after its add
      EXPECT_EQ(a.clip_min, -128) << n.name;        // the convolution before it has none
    }
  }
  EXPECT_EQ(residuals, 2);
  for (uint64_t seed : {1, 2}) {
    const std::vector<runtime::NDArray> want = run(q, seed), got = run(packed, seed);
    ASSERT_EQ(want.size(), got.size());
    EXPECT_GT(distinct_values(want[0]), 5);
    EXPECT_EQ(std::vector<float>(got[0].data(), got[0].data() + got[0].size()),
              std::vector<float>(want[0].data(), want[0].data() + want[0].size()));
  }
}

TEST(GraphPack, ConvolutionsTheBlocksDoNotDivideStayAndAreNamed) {
  const Graph q = quantized(testing::small_resnet(/*narrow=*/true));
  GraphPackReport report;
  const Graph packed = graph_pack(q, {}, &report);
  EXPECT_EQ(report.convolutions, 2);  // block1's
  ASSERT_EQ(report.not_packed.size(), 3u);
  EXPECT_NE(report.not_packed[0].find("block2.conv1"), std::string::npos) << report.not_packed[0];
  EXPECT_NE(report.not_packed[0].find("24 output channels are not multiples of the blocks"), std::string::npos)
      << report.not_packed[0];
  const std::vector<runtime::NDArray> want = run(q, 3), got = run(packed, 3);
  EXPECT_EQ(std::vector<float>(got[0].data(), got[0].data() + got[0].size()),
            std::vector<float>(want[0].data(), want[0].data() + want[0].size()));
}

TEST(GraphPack, ANetworkWithoutThePoolingsIsNamedAsSuch) {
  GraphBuilder b;
  const NodeId x = b.input("data", {1, 16, 8, 8});
  const Graph g = b.finish({b.relu(x, "r")});
  try {
    graph_pack(g);
    FAIL() << "packed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("graph_pack: the network has no max_pool2d to start packing after"),
              std::string::npos)
        << e.what();
  }
}

// The seed's network: every convolution after the stem packed (16 3x3 and 3
// downsampling 1x1), the 8 residual adds fused, the same logits to the bit.
TEST(GraphPackResNet, ResNet18PackedEqualsTheIntegerReference) {
  const Graph q = quantized(get_network("resnet-18"));
  GraphPackReport report;
  const Graph packed = graph_pack(q, {}, &report);
  EXPECT_EQ(report.convolutions, 19);
  EXPECT_EQ(report.residual_adds, 8);
  EXPECT_TRUE(report.not_packed.empty());
  EXPECT_EQ(count(packed, "layout_transform"), 2);
  const std::vector<runtime::NDArray> want = run(q, 7), got = run(packed, 7);
  EXPECT_GT(distinct_values(want[0]), 100);
  EXPECT_EQ(std::vector<float>(got[0].data(), got[0].data() + got[0].size()),
            std::vector<float>(want[0].data(), want[0].data() + want[0].size()));
}

}  // namespace
}  // namespace tessera::graph
