// VGG without batch norm, as torchvision's vgg11/13/16/19: 3x3 convolutions
// (padding 1, bias) with ReLU, 2x2 max pooling between stages, and the
// classifier 25088 -> 4096 -> 4096 -> 1000 with dropout. torchvision's
// AdaptiveAvgPool2d((7, 7)) is the identity at 224x224 and is left out.
#include <map>

#include "graph/zoo_blocks.h"
#include "tessera/error.h"

namespace tessera::graph::zoo {

Graph vgg(int depth, int64_t batch, const std::string& layout) {
  // Convolutions per stage (channels 64, 128, 256, 512, 512): configs A, B, D, E.
  static const std::map<int, std::vector<int>> configs = {
      {11, {1, 1, 2, 2, 2}}, {13, {2, 2, 2, 2, 2}}, {16, {2, 2, 3, 3, 3}}, {19, {2, 2, 4, 4, 4}}};
  auto it = configs.find(depth);
  if (it == configs.end()) throw Error("vgg: no VGG of depth " + std::to_string(depth));
  const int64_t widths[] = {64, 128, 256, 512, 512};

  NetBuilder net(layout, kSeed);
  NodeId x = net.input(batch, 3, 224, 224);
  int index = 0;  // torchvision numbers every module of `features`
  for (int stage = 0; stage < 5; ++stage) {
    for (int i = 0; i < it->second[stage]; ++i) {
      x = net.conv(x, ConvSpec{.out_channels = widths[stage], .kh = 3, .kw = 3, .pad_h = 1, .pad_w = 1, .bias = true},
                   "features." + std::to_string(index));
      x = net.relu(x, "features." + std::to_string(index + 1));
      index += 2;
    }
    x = net.max_pool(x, 2, 2, 0, "features." + std::to_string(index++));
  }
  x = net.flatten(x, "flatten");
  x = net.relu(net.linear(x, 4096, "classifier.0"), "classifier.1");
  x = net.dropout(x, 0.5, "classifier.2");
  x = net.relu(net.linear(x, 4096, "classifier.3"), "classifier.4");
  x = net.dropout(x, 0.5, "classifier.5");
  return net.finish(net.linear(x, 1000, "classifier.6"));
}

}  // namespace tessera::graph::zoo
