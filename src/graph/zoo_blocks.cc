#include "graph/zoo_blocks.h"

#include <cmath>

#include "ops/reference.h"

namespace tessera::graph::zoo {

ConvSpec ConvSpec::square(int64_t out_channels, int64_t kernel, int64_t stride, int64_t pad) {
  ConvSpec s;
  s.out_channels = out_channels;
  s.kh = s.kw = kernel;
  s.stride = stride;
  s.pad_h = s.pad_w = pad;
  return s;
}

NetBuilder::NetBuilder(const std::string& layout, uint64_t seed) : b_(seed), nhwc_(layout == "NHWC"), layout_(layout) {}

NodeId NetBuilder::input(int64_t batch, int64_t channels, int64_t height, int64_t width) {
  return b_.input("data", nhwc_ ? Shape{batch, height, width, channels} : Shape{batch, channels, height, width});
}

int64_t NetBuilder::channels(NodeId x) const { return b_.shape(x)[channel_axis()]; }

NodeId NetBuilder::conv(NodeId x, const ConvSpec& s, const std::string& name) {
  const int64_t in_per_group = channels(x) / s.groups;
  const float bound = std::sqrt(6.0f / float(in_per_group * s.kh * s.kw));  // He-uniform
  const std::string weight_name = name + ".weight";
  runtime::NDArray oihw = b_.random_array(weight_name, {s.out_channels, in_per_group, s.kh, s.kw}, -bound, bound);
  NodeId weight;
  if (nhwc_) {
    runtime::NDArray hwio({s.kh, s.kw, in_per_group, s.out_channels});
    ops::reference::transpose(oihw.data(), oihw.shape(), {2, 3, 1, 0}, hwio.data());
    weight = b_.constant(weight_name, std::move(hwio));
  } else {
    weight = b_.constant(weight_name, std::move(oihw));
  }
  Conv2dAttrs a;
  a.stride_h = a.stride_w = s.stride;
  a.pad_top = a.pad_bottom = s.pad_h;
  a.pad_left = a.pad_right = s.pad_w;
  a.groups = s.groups;
  a.data_layout = layout_;
  a.kernel_layout = nhwc_ ? "HWIO" : "OIHW";
  NodeId y = b_.conv2d(x, weight, a, name);
  if (!s.bias) return y;
  NodeId bias = b_.random_constant(name + ".bias", {s.out_channels}, -0.1f, 0.1f);
  return b_.bias_add(y, bias, channel_axis(), name + ".bias_add");
}

NodeId NetBuilder::batch_norm(NodeId x, const std::string& name, double epsilon, float gamma_scale) {
  const int64_t c = channels(x);
  NodeId gamma = b_.random_constant(name + ".weight", {c}, 0.8f * gamma_scale, 1.2f * gamma_scale);
  NodeId beta = b_.random_constant(name + ".bias", {c}, -0.1f, 0.1f);
  NodeId mean = b_.random_constant(name + ".running_mean", {c}, -0.1f, 0.1f);
  NodeId var = b_.random_constant(name + ".running_var", {c}, 0.8f, 1.2f);
  return b_.batch_norm(x, gamma, beta, mean, var, BatchNormAttrs{epsilon, channel_axis()}, name);
}

NodeId NetBuilder::relu(NodeId x, const std::string& name) { return b_.relu(x, name); }
NodeId NetBuilder::relu6(NodeId x, const std::string& name) { return b_.clip(x, 0.0f, 6.0f, name); }
NodeId NetBuilder::add(NodeId a, NodeId b, const std::string& name) { return b_.add(a, b, name); }

NodeId NetBuilder::max_pool(NodeId x, int64_t kernel, int64_t stride, int64_t pad, const std::string& name,
                            bool ceil_mode) {
  Pool2dAttrs a = Pool2dAttrs::symmetric(kernel, stride, pad);
  a.ceil_mode = ceil_mode;
  a.layout = layout_;
  return b_.max_pool2d(x, a, name);
}

NodeId NetBuilder::avg_pool(NodeId x, int64_t kernel, int64_t stride, int64_t pad, const std::string& name) {
  Pool2dAttrs a = Pool2dAttrs::symmetric(kernel, stride, pad);
  a.count_include_pad = true;
  a.layout = layout_;
  return b_.avg_pool2d(x, a, name);
}

NodeId NetBuilder::global_avg_pool(NodeId x, const std::string& name) { return b_.global_avg_pool2d(x, layout_, name); }

NodeId NetBuilder::concat(const std::vector<NodeId>& xs, const std::string& name) {
  return b_.concat(xs, channel_axis(), name);
}

NodeId NetBuilder::flatten(NodeId x, const std::string& name) {
  const Shape& s = b_.shape(x);
  if (nhwc_ && s.size() == 4 && s[1] * s[2] > 1) x = b_.layout_transform(x, "NHWC", "NCHW", name + ".to_nchw");
  return b_.flatten(x, 1, name);
}

NodeId NetBuilder::dropout(NodeId x, double rate, const std::string& name) { return b_.dropout(x, rate, name); }

NodeId NetBuilder::linear(NodeId x, int64_t out_features, const std::string& name) {
  const int64_t in_features = b_.shape(x)[1];
  const float bound = std::sqrt(6.0f / float(in_features));
  NodeId weight = b_.random_constant(name + ".weight", {out_features, in_features}, -bound, bound);
  NodeId bias = b_.random_constant(name + ".bias", {out_features}, -0.1f, 0.1f);
  return b_.bias_add(b_.dense(x, weight, name), bias, 1, name + ".bias_add");
}

}  // namespace tessera::graph::zoo
