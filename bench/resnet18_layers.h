#pragma once
// The distinct convolutions of ResNet-18 (batch 1, 224x224 input) and its
// classifier, as the benchmarks name and build them.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ops/registry.h"
#include "tessera/error.h"

namespace tessera::bench {

struct Layer {
  std::string name;  // torchvision's name of (the first) layer of this shape
  std::string op;
  ops::OpArgs args;
};

inline ops::OpArgs conv(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride,
                 int64_t size) {
  ops::OpArgs a;
  a.input = {1, in_channels, size, size};
  a.weight = {out_channels, in_channels, kernel, kernel};
  a.stride = stride;
  a.pad = kernel / 2;  // ResNet's "same" padding: 3 for 7x7, 1 for 3x3, 0 for 1x1
  a.layout = "NCHWc";
  return a;
}

inline std::vector<Layer> resnet18_layers() {
  ops::OpArgs fc;
  fc.input = {1, 512};
  fc.weight = {1000, 512};
  fc.bias = true;
  fc.layout = "packed";
  return {
      {"conv1", "conv2d", conv(3, 64, 7, 2, 224)},
      {"layer1.conv", "conv2d", conv(64, 64, 3, 1, 56)},
      {"layer2.0.conv1", "conv2d", conv(64, 128, 3, 2, 56)},
      {"layer2.0.downsample", "conv2d", conv(64, 128, 1, 2, 56)},
      {"layer2.conv", "conv2d", conv(128, 128, 3, 1, 28)},
      {"layer3.0.conv1", "conv2d", conv(128, 256, 3, 2, 28)},
      {"layer3.0.downsample", "conv2d", conv(128, 256, 1, 2, 28)},
      {"layer3.conv", "conv2d", conv(256, 256, 3, 1, 14)},
      {"layer4.0.conv1", "conv2d", conv(256, 512, 3, 2, 14)},
      {"layer4.0.downsample", "conv2d", conv(256, 512, 1, 2, 14)},
      {"layer4.conv", "conv2d", conv(512, 512, 3, 1, 7)},
      {"fc", "dense", fc},
  };
}

// "64->128 3x3 s2 @56" / "512->1000 dense"
inline std::string describe(const Layer& l) {
  const ops::OpArgs& a = l.args;
  if (l.op == "dense") return fmt::format("{}->{} dense", a.input[1], a.weight[0]);
  return fmt::format("{}->{} {}x{} s{} @{}", a.input[1], a.weight[0], a.weight[2], a.weight[3],
                     a.stride, a.input[2]);
}

// "all", or torchvision layer names; an unknown name is an error listing them.
inline std::vector<Layer> select_layers(const std::vector<std::string>& names) {
  std::vector<Layer> all = resnet18_layers();
  if (names.size() == 1 && names[0] == "all") return all;
  std::vector<Layer> chosen;
  for (const std::string& name : names) {
    auto it = std::find_if(all.begin(), all.end(), [&](const Layer& l) { return l.name == name; });
    if (it == all.end()) {
      std::string known;
      for (const Layer& l : all) known += " " + l.name;
      throw Error(fmt::format("--layers: no layer '{}'; the layers are:{}", name, known));
    }
    chosen.push_back(*it);
  }
  return chosen;
}

}  // namespace tessera::bench
