// The model zoo: every network builds in both layouts with logits [batch,
// 1000] and torchvision's parameter count; small ones run through the
// interpreter and agree across layouts.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>

#include "graph/interpreter.h"
#include "graph/printer.h"
#include "graph/zoo.h"
#include "graph_test_util.h"
#include "ops/layout.h"

namespace tessera::graph {
namespace {

using test::error_of;
using test::max_relative_error;
using test::values;

// torchvision's published counts: sum(p.numel() for p in model.parameters()).
// PyTorch counts batch norm's weight and bias as parameters and its running
// mean and variance as buffers, so count_parameters leaves those two out.
// inception_v3: 27,161,264 in torchvision includes AuxLogits (3,326,696),
// which the zoo omits. mobilenet (v1, not in torchvision): Keras' trainable
// parameter count of MobileNet(alpha=1.0), the same convention.
const std::map<std::string, int64_t>& expected_parameters() {
  static const std::map<std::string, int64_t> counts = {
      {"resnet-18", 11689512},    {"resnet-34", 21797672}, {"resnet-50", 25557032},   {"resnet-101", 44549160},
      {"resnet-152", 60192808},   {"vgg-11", 132863336},   {"vgg-13", 133047848},     {"vgg-16", 138357544},
      {"vgg-19", 143667240},      {"mobilenet", 4231976},  {"mobilenet-v2", 3504872}, {"squeezenet_v1.1", 1235496},
      {"inception_v3", 23834568},
  };
  return counts;
}

TEST(Zoo, EveryNetworkHasLogitsAndTorchvisionsParameterCount) {
  EXPECT_EQ(network_names().size(), expected_parameters().size());
  for (const std::string& name : network_names())
    for (const std::string layout : {"NCHW", "NHWC"}) {
      Graph g = get_network(name, 2, layout);
      ASSERT_EQ(g.outputs().size(), 1u);
      EXPECT_EQ(g.node(g.outputs()[0]).type.shape, (Shape{2, 1000})) << name << " " << layout;
      EXPECT_EQ(count_parameters(g), expected_parameters().at(name)) << name << " " << layout;
      const NodeId data = g.input_ids().at(0);
      const int64_t side = name == "inception_v3" ? 299 : 224;
      EXPECT_EQ(g.node(data).type.shape, layout == "NCHW" ? Shape({2, 3, side, side}) : Shape({2, side, side, 3}));
    }
}

TEST(Zoo, NodeNamesAreTorchvisionsModulePaths) {
  Graph r = get_network("resnet-50");
  for (const char* name : {"conv1", "layer1.0.conv1", "layer3.5.bn3", "layer4.0.downsample.0", "fc"})
    EXPECT_TRUE(r.find(name)) << name;
  const Node& conv2 = r.node(*r.find("layer2.0.conv2"));  // v1.5: the stride is on the 3x3
  EXPECT_EQ(conv2.attrs_as<Conv2dAttrs>().stride_h, 2);
  EXPECT_EQ(r.node(*r.find("layer2.0.conv1")).attrs_as<Conv2dAttrs>().stride_h, 1);

  Graph m = get_network("mobilenet-v2", 1, "NHWC");
  const Node& dw = m.node(*m.find("features.17.conv.1.0"));
  EXPECT_TRUE(is_depthwise(m, dw));
  EXPECT_EQ(dw.type.shape, (Shape{1, 7, 7, 960}));
  EXPECT_FALSE(is_depthwise(m, m.node(*m.find("features.17.conv.2"))));
  EXPECT_EQ(m.node(*m.find("features.18.2")).op, Op::kClip);

  Graph s = get_network("squeezenet_v1.1");
  EXPECT_EQ(s.node(*s.find("features.3.squeeze")).type.shape, (Shape{1, 16, 55, 55}));
  EXPECT_EQ(s.node(*s.find("features.12.cat")).type.shape, (Shape{1, 512, 13, 13}));

  Graph i = get_network("inception_v3");
  EXPECT_EQ(i.node(*i.find("Mixed_5b.cat")).type.shape, (Shape{1, 256, 35, 35}));
  EXPECT_EQ(i.node(*i.find("Mixed_6e.cat")).type.shape, (Shape{1, 768, 17, 17}));
  EXPECT_EQ(i.node(*i.find("Mixed_7c.cat")).type.shape, (Shape{1, 2048, 8, 8}));
  EXPECT_FALSE(i.find("AuxLogits.fc"));

  Graph v = get_network("vgg-16");
  EXPECT_EQ(v.node(*v.find("features.30")).type.shape, (Shape{1, 512, 7, 7}));
  EXPECT_EQ(v.node(*v.find("classifier.2")).op, Op::kDropout);
}

TEST(Zoo, BadRequestsAreErrorsListingTheChoices) {
  EXPECT_EQ(error_of([] { get_network("resnet-19"); }),
            "get_network: unknown network 'resnet-19' (valid: resnet-18, resnet-34, resnet-50, resnet-101, "
            "resnet-152, vgg-11, vgg-13, vgg-16, vgg-19, mobilenet, mobilenet-v2, squeezenet_v1.1, inception_v3)");
  EXPECT_EQ(error_of([] { get_network("resnet-18", 1, "NCHW8c"); }),
            "get_network: layout 'NCHW8c' is not NCHW or NHWC");
  EXPECT_EQ(error_of([] { get_network("resnet-18", 0); }), "get_network: batch 0 must be between 1 and 2^20");
}

TEST(Zoo, WeightsAreReproducibleAndShapesPrintable) {
  Graph a = get_network("squeezenet_v1.1"), b = get_network("squeezenet_v1.1");
  const Node& wa = a.node(*a.find("features.0.weight"));
  const Node& wb = b.node(*b.find("features.0.weight"));
  EXPECT_EQ(values(*wa.value), values(*wb.value));
  const std::string text = print_graph(a, {.constants = false});
  EXPECT_NE(text.find("%features.3.squeeze = conv2d(%features.2, %features.3.squeeze.weight) strides=[1, 1] "
                      "padding=[0, 0, 0, 0] dilation=[1, 1] groups=1 data_layout=NCHW kernel_layout=OIHW -> "
                      "float32[1, 16, 55, 55]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%features.2 = max_pool2d(%features.1) pool_size=[3, 3] strides=[2, 2] padding=[0, 0, 0, 0] "
                      "layout=NCHW ceil_mode=1 -> float32[1, 64, 55, 55]"),
            std::string::npos);
  EXPECT_EQ(text.find("= constant"), std::string::npos);
  EXPECT_NE(text.find("outputs: %flatten"), std::string::npos);
}

// Runs a zoo network in NCHW and NHWC on the same image: the logits agree.
void expect_layouts_agree(const std::string& name, int64_t batch) {
  const Graph nchw = get_network(name, batch, "NCHW"), nhwc = get_network(name, batch, "NHWC");
  const Shape shape = nchw.node(nchw.input_ids()[0]).type.shape;
  std::vector<runtime::NDArray> in_nchw, in_nhwc;
  in_nchw.push_back(test::random_array(shape, 42));
  in_nhwc.push_back(test::array({shape[0], shape[2], shape[3], shape[1]}, ops::nchw_to_nhwc(in_nchw[0].data(), shape)));
  const auto start = std::chrono::steady_clock::now();
  const std::vector<float> a = values(interpret(nchw, in_nchw).at(0));
  const auto middle = std::chrono::steady_clock::now();
  const std::vector<float> b = values(interpret(nhwc, in_nhwc).at(0));
  const auto end = std::chrono::steady_clock::now();
  ASSERT_EQ(a.size(), static_cast<size_t>(batch * 1000));
  double largest = 0;
  for (float v : a) {
    ASSERT_TRUE(std::isfinite(v)) << name;
    largest = std::max(largest, double(std::fabs(v)));
  }
  EXPECT_NE(*std::min_element(a.begin(), a.end()), *std::max_element(a.begin(), a.end())) << name;
  // Activations stay O(1) with the zoo's weights: logits neither vanish nor explode.
  EXPECT_GT(largest, 1e-2) << name;
  EXPECT_LT(largest, 1e3) << name;
  EXPECT_LT(max_relative_error(b, a), 1e-4) << name;
  std::printf("%s batch %lld: NCHW %.2f s, NHWC %.2f s, largest logit %.3g\n", name.c_str(),
              static_cast<long long>(batch), std::chrono::duration<double>(middle - start).count(),
              std::chrono::duration<double>(end - middle).count(), largest);
}

TEST(Zoo, Resnet18RunsAndAgreesAcrossLayouts) { expect_layouts_agree("resnet-18", 1); }
TEST(Zoo, MobilenetV2RunsAndAgreesAcrossLayouts) { expect_layouts_agree("mobilenet-v2", 1); }
TEST(Zoo, SqueezenetRunsAndAgreesAcrossLayouts) { expect_layouts_agree("squeezenet_v1.1", 2); }

}  // namespace
}  // namespace tessera::graph
