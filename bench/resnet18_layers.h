#pragma once
// The distinct convolutions of ResNet-18 (batch 1, 224x224 input) and its
// classifier, as the benchmarks name and build them.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "graph/passes.h"
#include "ops/conv2d.h"
#include "ops/registry.h"
#include "tessera/error.h"

namespace tessera::bench {

struct Layer {
  std::string name;  // torchvision's name of (the first) layer of this shape
  std::string op;    // Tessera's op: conv2d, conv2d_winograd or dense
  ops::OpArgs args;

  // The op oneDNN computes the same layer with (it has no Winograd on AVX2).
  std::string baseline_op() const { return op == "conv2d_winograd" ? "conv2d" : op; }
};

inline ops::OpArgs conv(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride, int64_t size) {
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

// The layer as a network build computes it: the convolutions convert_layout
// marks for Winograd (graph::winograd_tile_for) become conv2d_winograd.
inline Layer as_built(Layer l) {
  if (l.op != "conv2d") return l;
  const ops::OpArgs& a = l.args;
  const ops::Shape out =
      ops::conv2d_nchw_output_shape(a.input, a.weight, ops::Conv2dAttrs::symmetric(a.stride, a.pad, a.dilation));
  if (const int64_t m =
          graph::winograd_tile_for(ops::Conv2dAttrs::symmetric(a.stride, a.pad, a.dilation), a.weight, out)) {
    l.op = "conv2d_winograd";
    l.args.winograd_tile = m;
  }
  return l;
}

// "64->128 3x3 s2 @56" / "64->64 3x3 s1 @56 wino4" / "512->1000 dense"
inline std::string describe(const Layer& l) {
  const ops::OpArgs& a = l.args;
  if (l.op == "dense") return fmt::format("{}->{} dense", a.input[1], a.weight[0]);
  return fmt::format("{}->{} {}x{} s{} @{}{}", a.input[1], a.weight[0], a.weight[2], a.weight[3], a.stride, a.input[2],
                     l.op == "conv2d_winograd" ? fmt::format(" wino{}", a.winograd_tile) : "");
}

// "all", or torchvision layer names; an unknown name is an error listing them.
// `winograd`: the 3x3 stride-1 layers as_built.
inline std::vector<Layer> select_layers(const std::vector<std::string>& names, bool winograd = false) {
  std::vector<Layer> all = resnet18_layers();
  if (winograd)
    for (Layer& l : all) l = as_built(l);
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
