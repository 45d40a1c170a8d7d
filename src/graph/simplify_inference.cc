// simplify_inference and fold_batch_norm (passes.h).
#include <cmath>

#include "graph/channel_constant.h"
#include "graph/passes.h"
#include "graph/rewriter.h"

namespace tessera::graph {
namespace {

// The channel axis of a conv2d's or dense's output, and its extent.
struct OutputChannels {
  size_t rank = 0, axis = 0;
  int64_t count = 0;
};

std::optional<OutputChannels> output_channels(const Node& n) {
  const Shape& s = n.type.shape;
  if (n.op == Op::kDense) return OutputChannels{2, 1, s[1]};
  if (n.op != Op::kConv2d) return std::nullopt;
  const auto& a = n.attrs_as<Conv2dAttrs>();
  if (a.data_layout == "NCHW" && a.kernel_layout == "OIHW") return OutputChannels{4, 1, s[1]};
  if (a.data_layout == "NHWC" && a.kernel_layout == "HWIO") return OutputChannels{4, 3, s[3]};
  return std::nullopt;  // blocked layouts: batch norm is folded before convert_layout
}

// The weight scaled per output channel: OIHW and (N, K) have it first, HWIO last.
runtime::NDArray scaled_weight(const Node& conv, const runtime::NDArray& w, const std::vector<float>& scale) {
  runtime::NDArray out(w.shape());
  const int64_t channels = static_cast<int64_t>(scale.size());
  const bool last = conv.op == Op::kConv2d && conv.attrs_as<Conv2dAttrs>().kernel_layout == "HWIO";
  const int64_t inner = w.size() / channels;
  for (int64_t i = 0; i < w.size(); ++i) out[i] = w[i] * scale[last ? i % channels : i / inner];
  return out;
}

}  // namespace

Graph simplify_inference(const Graph& g) {
  Rewriter r(g);
  for (const Node& n : g.nodes()) {
    if (n.op == Op::kDropout) {
      r.replace(n.id, r.mapped(n.inputs[0]));
      continue;
    }
    if (n.op == Op::kBiasAdd) {
      // A constant bias is a broadcasting add, which the layout and fusion passes know.
      const auto& a = n.attrs_as<BiasAddAttrs>();
      const size_t rank = n.type.shape.size();
      const size_t axis = static_cast<size_t>(a.axis < 0 ? a.axis + static_cast<int64_t>(rank) : a.axis);
      if (auto bias = channel_values(g.node(n.inputs[1]), 1, 0, n.type.shape[axis])) {
        NodeId b = r.add_constant(g.node(n.inputs[1]).name + ".bcast", channel_constant(*bias, rank, axis));
        r.replace(n.id, r.add(Op::kAdd, n.name, {r.mapped(n.inputs[0]), b}));
        continue;
      }
    }
    if (n.op != Op::kBatchNorm) {
      r.copy(n);
      continue;
    }
    const auto& a = n.attrs_as<BatchNormAttrs>();
    const size_t rank = n.type.shape.size();
    const size_t axis = static_cast<size_t>(a.axis < 0 ? a.axis + static_cast<int64_t>(rank) : a.axis);
    const int64_t channels = n.type.shape[axis];
    std::vector<std::vector<float>> p;  // gamma, beta, mean, var
    for (size_t i = 1; i < 5; ++i)
      if (auto v = channel_values(g.node(n.inputs[i]), 1, 0, channels)) p.push_back(*v);
    if (p.size() != 4) {  // statistics computed at run time: nothing to fold
      r.copy(n);
      continue;
    }
    std::vector<float> scale(channels), shift(channels);
    for (int64_t c = 0; c < channels; ++c) {
      scale[c] = static_cast<float>(p[0][c] / std::sqrt(static_cast<double>(p[3][c]) + a.epsilon));
      shift[c] = p[1][c] - p[2][c] * scale[c];
    }
    NodeId s = r.add_constant(n.name + ".scale", channel_constant(scale, rank, axis));
    NodeId b = r.add_constant(n.name + ".shift", channel_constant(shift, rank, axis));
    NodeId m = r.add(Op::kMultiply, n.name + ".mul", {r.mapped(n.inputs[0]), s});
    r.replace(n.id, r.add(Op::kAdd, n.name, {m, b}));
  }
  return r.finish();
}

Graph fold_batch_norm(const Graph& g) {
  const std::vector<int> consumers = count_consumers(g);
  Rewriter r(g);
  for (const Node& n : g.nodes()) {
    // multiply(producer, per-channel constant) where the producer is a conv2d
    // or dense with a constant weight and no other reader.
    if (n.op == Op::kMultiply) {
      const Node& producer = g.node(n.inputs[0]);
      const Node& weight = producer.inputs.size() > 1 ? g.node(producer.inputs[1]) : producer;
      auto channels = output_channels(producer);
      if (channels && consumers[producer.id] == 1 && weight.op == Op::kConstant &&
          producer.type.shape == n.type.shape) {
        if (auto scale = channel_values(g.node(n.inputs[1]), channels->rank, channels->axis, channels->count)) {
          NodeId w = r.add_constant(weight.name + ".folded", scaled_weight(producer, *weight.value, *scale));
          // The unfolded copy made earlier has no reader left: eliminate_dead_nodes drops it.
          r.replace(n.id, r.add(producer.op, producer.name + ".bn", {r.mapped(producer.inputs[0]), w}, producer.attrs));
          continue;
        }
      }
    }
    r.copy(n);
  }
  return eliminate_dead_nodes(r.finish());
}

}  // namespace tessera::graph
