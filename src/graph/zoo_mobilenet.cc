// MobileNet v1 (Howard et al. 2017, width 1.0, 224x224) and MobileNet v2 as
// torchvision's mobilenet_v2 (inverted residuals with ReLU6, width 1.0).
// torchvision has no v1: its names follow the usual PyTorch port ("conv1",
// "layers.3.conv1" for a depthwise and "layers.3.conv2" for a pointwise
// convolution); v2's are torchvision's module paths.
#include "graph/zoo_blocks.h"

namespace tessera::graph::zoo {
namespace {

// Convolution + batch norm + activation, as torchvision's Conv2dNormActivation:
// "<p>.0" conv, "<p>.1" batch norm, "<p>.2" ReLU6.
NodeId conv_bn_relu6(NetBuilder& net, NodeId x, ConvSpec spec, const std::string& p) {
  NodeId y = net.conv(x, spec, p + ".0");
  return net.relu6(net.batch_norm(y, p + ".1"), p + ".2");
}

NodeId inverted_residual(NetBuilder& net, NodeId x, int64_t out, int64_t stride, int64_t expand, const std::string& p) {
  const int64_t in = net.channels(x), hidden = in * expand;
  NodeId y = x;
  int index = 0;  // modules of "<p>.conv"
  auto next = [&] { return p + ".conv." + std::to_string(index++); };
  if (expand != 1) y = conv_bn_relu6(net, y, ConvSpec::square(hidden, 1), next());
  ConvSpec depthwise = ConvSpec::square(hidden, 3, stride, 1);
  depthwise.groups = hidden;
  y = conv_bn_relu6(net, y, depthwise, next());
  y = net.conv(y, ConvSpec::square(out, 1), next());
  const bool residual = stride == 1 && in == out;
  // A residual branch ends in a small gamma (zoo_blocks.h).
  y = net.batch_norm(y, next(), 1e-5, residual ? 0.3f : 1.0f);
  return residual ? net.add(x, y, p + ".add") : y;
}

}  // namespace

Graph mobilenet_v1(int64_t batch, const std::string& layout) {
  NetBuilder net(layout, kSeed);
  NodeId x = net.input(batch, 3, 224, 224);
  x = net.conv(x, ConvSpec::square(32, 3, 2, 1), "conv1");
  x = net.relu(net.batch_norm(x, "bn1"), "relu1");
  // (output channels, stride) of each depthwise-separable block.
  const std::pair<int64_t, int64_t> blocks[] = {{64, 1},  {128, 2}, {128, 1}, {256, 2}, {256, 1},  {512, 2}, {512, 1},
                                                {512, 1}, {512, 1}, {512, 1}, {512, 1}, {1024, 2}, {1024, 1}};
  int i = 0;
  for (auto [out, stride] : blocks) {
    const std::string p = "layers." + std::to_string(i++);
    ConvSpec depthwise = ConvSpec::square(net.channels(x), 3, stride, 1);
    depthwise.groups = net.channels(x);
    x = net.relu(net.batch_norm(net.conv(x, depthwise, p + ".conv1"), p + ".bn1"), p + ".relu1");
    x = net.relu(net.batch_norm(net.conv(x, ConvSpec::square(out, 1), p + ".conv2"), p + ".bn2"), p + ".relu2");
  }
  x = net.flatten(net.global_avg_pool(x, "avgpool"), "flatten");
  return net.finish(net.linear(x, 1000, "fc"));
}

Graph mobilenet_v2(int64_t batch, const std::string& layout) {
  NetBuilder net(layout, kSeed);
  NodeId x = net.input(batch, 3, 224, 224);
  x = conv_bn_relu6(net, x, ConvSpec::square(32, 3, 2, 1), "features.0");
  // (expansion t, output channels c, repeats n, first stride s), from the paper.
  const int64_t settings[][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                 {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int index = 1;
  for (const auto& s : settings)
    for (int64_t i = 0; i < s[2]; ++i)
      x = inverted_residual(net, x, s[1], i == 0 ? s[3] : 1, s[0], "features." + std::to_string(index++));
  x = conv_bn_relu6(net, x, ConvSpec::square(1280, 1), "features." + std::to_string(index));
  x = net.flatten(net.global_avg_pool(x, "avgpool"), "flatten");
  x = net.dropout(x, 0.2, "classifier.0");
  return net.finish(net.linear(x, 1000, "classifier.1"));
}

}  // namespace tessera::graph::zoo
