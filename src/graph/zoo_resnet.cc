// ResNet v1.5 as torchvision defines it: the stride of a downsampling block is
// on its 3x3 convolution (Bottleneck.conv2), and the shortcut is a 1x1
// convolution + batch norm ("downsample.0", "downsample.1") wherever the shape
// changes. Node names are torchvision's module paths.
#include <map>

#include "graph/zoo_blocks.h"
#include "tessera/error.h"

namespace tessera::graph::zoo {
namespace {

// Residual branches end in a batch norm with a small gamma (see zoo_blocks.h).
constexpr float kLastGamma = 0.3f;

NodeId basic_block(NetBuilder& net, NodeId x, int64_t planes, int64_t stride, const std::string& p) {
  NodeId y = net.conv(x, ConvSpec::square(planes, 3, stride, 1), p + ".conv1");
  y = net.relu(net.batch_norm(y, p + ".bn1"), p + ".relu");
  y = net.conv(y, ConvSpec::square(planes, 3, 1, 1), p + ".conv2");
  y = net.batch_norm(y, p + ".bn2", 1e-5, kLastGamma);
  NodeId shortcut = x;
  if (stride != 1 || net.channels(x) != planes)
    shortcut =
        net.batch_norm(net.conv(x, ConvSpec::square(planes, 1, stride), p + ".downsample.0"), p + ".downsample.1");
  return net.relu(net.add(y, shortcut, p + ".add"), p + ".relu");
}

NodeId bottleneck(NetBuilder& net, NodeId x, int64_t planes, int64_t stride, const std::string& p) {
  constexpr int64_t kExpansion = 4;
  NodeId y = net.conv(x, ConvSpec::square(planes, 1), p + ".conv1");
  y = net.relu(net.batch_norm(y, p + ".bn1"), p + ".relu");
  y = net.conv(y, ConvSpec::square(planes, 3, stride, 1), p + ".conv2");
  y = net.relu(net.batch_norm(y, p + ".bn2"), p + ".relu");
  y = net.conv(y, ConvSpec::square(planes * kExpansion, 1), p + ".conv3");
  y = net.batch_norm(y, p + ".bn3", 1e-5, kLastGamma);
  NodeId shortcut = x;
  if (stride != 1 || net.channels(x) != planes * kExpansion)
    shortcut = net.batch_norm(net.conv(x, ConvSpec::square(planes * kExpansion, 1, stride), p + ".downsample.0"),
                              p + ".downsample.1");
  return net.relu(net.add(y, shortcut, p + ".add"), p + ".relu");
}

}  // namespace

Graph resnet(int depth, int64_t batch, const std::string& layout) {
  // Blocks per stage, and whether the blocks are bottlenecks.
  static const std::map<int, std::pair<std::vector<int>, bool>> configs = {
      {18, {{2, 2, 2, 2}, false}},  {34, {{3, 4, 6, 3}, false}},  {50, {{3, 4, 6, 3}, true}},
      {101, {{3, 4, 23, 3}, true}}, {152, {{3, 8, 36, 3}, true}},
  };
  auto it = configs.find(depth);
  if (it == configs.end()) throw Error("resnet: no ResNet of depth " + std::to_string(depth));
  const auto& [blocks, is_bottleneck] = it->second;

  NetBuilder net(layout, kSeed);
  NodeId x = net.input(batch, 3, 224, 224);
  x = net.conv(x, ConvSpec::square(64, 7, 2, 3), "conv1");
  x = net.relu(net.batch_norm(x, "bn1"), "relu");
  x = net.max_pool(x, 3, 2, 1, "maxpool");
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t planes = int64_t{64} << stage;
    for (int i = 0; i < blocks[stage]; ++i) {
      const int64_t stride = stage > 0 && i == 0 ? 2 : 1;
      const std::string prefix = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      x = is_bottleneck ? bottleneck(net, x, planes, stride, prefix) : basic_block(net, x, planes, stride, prefix);
    }
  }
  x = net.flatten(net.global_avg_pool(x, "avgpool"), "flatten");
  return net.finish(net.linear(x, 1000, "fc"));
}

}  // namespace tessera::graph::zoo
