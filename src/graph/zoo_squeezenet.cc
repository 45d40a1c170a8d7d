// SqueezeNet 1.1 as torchvision's squeezenet1_1: fire modules (1x1 squeeze,
// then 1x1 and 3x3 expands concatenated on channels), max pooling with
// ceil_mode, and a convolutional classifier (dropout, 1x1 conv to 1000, ReLU,
// global average pool).
#include "graph/zoo_blocks.h"

namespace tessera::graph::zoo {
namespace {

ConvSpec biased(int64_t out, int64_t kernel, int64_t stride = 1, int64_t pad = 0) {
  ConvSpec s = ConvSpec::square(out, kernel, stride, pad);
  s.bias = true;
  return s;
}

NodeId fire(NetBuilder& net, NodeId x, int64_t squeeze, int64_t expand1x1, int64_t expand3x3, const std::string& p) {
  x = net.relu(net.conv(x, biased(squeeze, 1), p + ".squeeze"), p + ".squeeze_activation");
  NodeId a = net.relu(net.conv(x, biased(expand1x1, 1), p + ".expand1x1"), p + ".expand1x1_activation");
  NodeId b = net.relu(net.conv(x, biased(expand3x3, 3, 1, 1), p + ".expand3x3"), p + ".expand3x3_activation");
  return net.concat({a, b}, p + ".cat");
}

}  // namespace

Graph squeezenet_v1_1(int64_t batch, const std::string& layout) {
  NetBuilder net(layout, kSeed);
  NodeId x = net.input(batch, 3, 224, 224);
  x = net.relu(net.conv(x, biased(64, 3, 2), "features.0"), "features.1");
  x = net.max_pool(x, 3, 2, 0, "features.2", /*ceil_mode=*/true);
  x = fire(net, x, 16, 64, 64, "features.3");
  x = fire(net, x, 16, 64, 64, "features.4");
  x = net.max_pool(x, 3, 2, 0, "features.5", true);
  x = fire(net, x, 32, 128, 128, "features.6");
  x = fire(net, x, 32, 128, 128, "features.7");
  x = net.max_pool(x, 3, 2, 0, "features.8", true);
  x = fire(net, x, 48, 192, 192, "features.9");
  x = fire(net, x, 48, 192, 192, "features.10");
  x = fire(net, x, 64, 256, 256, "features.11");
  x = fire(net, x, 64, 256, 256, "features.12");
  x = net.dropout(x, 0.5, "classifier.0");
  x = net.relu(net.conv(x, biased(1000, 1), "classifier.1"), "classifier.2");
  return net.finish(net.flatten(net.global_avg_pool(x, "classifier.3"), "flatten"));
}

}  // namespace tessera::graph::zoo
