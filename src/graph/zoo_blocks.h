#pragma once
// Building blocks of the model zoo, written once for both layouts: a NetBuilder
// makes every weight in PyTorch's layout (OIHW) from a seed derived from its
// name and transposes it to HWIO for NHWC, so a network built in NCHW and in
// NHWC computes the same function with the same weights.
//
// Weights are He-uniform (variance 2 / fan_in, which keeps activations O(1)
// through ReLU stacks), batch norm's statistics are near the identity (mean ~ 0,
// var ~ 1, gamma ~ 1), and the last batch norm of a residual branch has a small
// gamma so that fifty residual additions (ResNet-152) do not grow activations
// by 2^50.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/builder.h"

namespace tessera::graph::zoo {

// One convolution: kernel kh x kw, stride, padding (pad_h on top and bottom,
// pad_w on left and right), groups; bias adds a bias_add node.
struct ConvSpec {
  int64_t out_channels = 1;
  int64_t kh = 1, kw = 1;
  int64_t stride = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t groups = 1;
  bool bias = false;

  // A square kernel with the same padding on every side.
  static ConvSpec square(int64_t out_channels, int64_t kernel, int64_t stride = 1, int64_t pad = 0);
};

class NetBuilder {
 public:
  // layout: "NCHW" or "NHWC".
  NetBuilder(const std::string& layout, uint64_t seed);

  // The network's input "data": (batch, channels, height, width) in NCHW.
  NodeId input(int64_t batch, int64_t channels, int64_t height, int64_t width);
  int64_t channels(NodeId x) const;
  int64_t channel_axis() const { return nhwc_ ? 3 : 1; }

  // Node `name`; weight "<name>.weight", bias "<name>.bias" (+ "<name>.bias_add").
  NodeId conv(NodeId x, const ConvSpec& spec, const std::string& name);
  // Inference batch norm "<name>" with "<name>.weight" (gamma), ".bias" (beta),
  // ".running_mean", ".running_var". gamma_scale scales gamma (see above).
  NodeId batch_norm(NodeId x, const std::string& name, double epsilon = 1e-5, float gamma_scale = 1.0f);
  NodeId relu(NodeId x, const std::string& name);
  NodeId relu6(NodeId x, const std::string& name);
  NodeId add(NodeId a, NodeId b, const std::string& name);
  NodeId max_pool(NodeId x, int64_t kernel, int64_t stride, int64_t pad, const std::string& name,
                  bool ceil_mode = false);
  // count_include_pad as PyTorch's default (true).
  NodeId avg_pool(NodeId x, int64_t kernel, int64_t stride, int64_t pad, const std::string& name);
  NodeId global_avg_pool(NodeId x, const std::string& name);
  // Along the channel axis.
  NodeId concat(const std::vector<NodeId>& xs, const std::string& name);
  // To (N, C*H*W) in PyTorch's (c, h, w) order: an NHWC tensor with more than
  // one pixel goes back to NCHW first, so the dense weights are the same.
  NodeId flatten(NodeId x, const std::string& name);
  NodeId dropout(NodeId x, double rate, const std::string& name);
  // Linear layer: dense "<name>" + bias_add "<name>.bias_add"; returns the latter.
  NodeId linear(NodeId x, int64_t out_features, const std::string& name);

  Graph finish(NodeId output) { return b_.finish({output}); }

 private:
  GraphBuilder b_;
  bool nhwc_;
  std::string layout_;
};

// The networks, one function per family (zoo_<family>.cc).
Graph resnet(int depth, int64_t batch, const std::string& layout);
Graph vgg(int depth, int64_t batch, const std::string& layout);
Graph mobilenet_v1(int64_t batch, const std::string& layout);
Graph mobilenet_v2(int64_t batch, const std::string& layout);
Graph squeezenet_v1_1(int64_t batch, const std::string& layout);
Graph inception_v3(int64_t batch, const std::string& layout);

// The seed of every zoo network's weights.
inline constexpr uint64_t kSeed = 20240901;

}  // namespace tessera::graph::zoo
