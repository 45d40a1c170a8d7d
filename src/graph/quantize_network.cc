#include "graph/quantize_network.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "graph/interpreter.h"
#include "graph/passes.h"
#include "graph/rewriter.h"
#include "ops/conv2d.h"
#include "ops/elementwise.h"
#include "ops/qlinear_add.h"
#include "ops/qlinear_conv2d.h"
#include "ops/requantize.h"
#include "tessera/error.h"

namespace tessera::graph {

ops::QuantizeAttrs activation_quantization(const ValueRange& r) {
  const double lo = std::min<double>(r.lo, 0.0), hi = std::max<double>(r.hi, 0.0);
  if (hi - lo <= 0) return {1.0f, 0, "uint8"};
  const auto scale = static_cast<float>((hi - lo) / 255.0);
  const auto zero_point = static_cast<int64_t>(std::clamp(std::nearbyint(-lo / scale), 0.0, 255.0));
  return {scale, zero_point, "uint8"};
}

namespace {

// A convolution, its bias (a constant added per channel) and its ReLU: the
// nodes one qlinear_conv2d replaces, `last` the one whose value leaves.
struct ConvChain {
  NodeId conv = -1, bias = -1, relu = -1, last = -1;
};

bool per_channel_constant(const Graph& g, NodeId id, int64_t channels) {
  const Node& n = g.node(id);
  if (n.op != Op::kConstant) return false;
  const Shape& s = n.type.shape;
  return (s == Shape{channels, 1, 1} || s == Shape{1, channels, 1, 1} || s == Shape{channels});
}

std::vector<ConvChain> conv_chains(const Graph& g) {
  const std::vector<int> uses = count_consumers(g);
  std::vector<NodeId> single_reader(g.size(), -1);  // the reader of a node read once
  for (const Node& n : g.nodes())
    for (NodeId in : n.inputs) single_reader[in] = uses[in] == 1 ? n.id : -1;
  std::vector<ConvChain> chains;
  for (const Node& n : g.nodes()) {
    if (n.op != Op::kConv2d) continue;
    const auto& a = n.attrs_as<ops::Conv2dAttrs>();
    const Shape& w = g.node(n.inputs[1]).type.shape;
    const bool depthwise = is_depthwise(g, n) && w[0] == a.groups;  // multiplier 1
    if (a.data_layout != "NCHW" || a.kernel_layout != "OIHW" || (a.groups != 1 && !depthwise) || a.winograd_tile ||
        a.implicit_gemm || g.node(n.inputs[1]).op != Op::kConstant)
      continue;
    ConvChain c{n.id, -1, -1, n.id};
    const int64_t channels = n.type.shape[1];
    if (NodeId r = single_reader[c.last]; r >= 0 && g.node(r).op == Op::kAdd) {
      const Node& add = g.node(r);
      const NodeId other = add.inputs[0] == c.last ? add.inputs[1] : add.inputs[0];
      if (per_channel_constant(g, other, channels) && add.type.shape == n.type.shape) c.bias = c.last = r;
    }
    if (NodeId r = single_reader[c.last]; r >= 0 && g.node(r).op == Op::kRelu) c.relu = c.last = r;
    // A clip from 0 (ReLU6) saturates the same way, at its maximum too.
    if (NodeId r = single_reader[c.last]; c.relu < 0 && r >= 0 && g.node(r).op == Op::kClip &&
                                          g.node(r).attrs_as<ops::ClipAttrs>().min == 0.0f &&
                                          g.node(r).attrs_as<ops::ClipAttrs>().max > 0.0f)
      c.relu = c.last = r;
    chains.push_back(c);
  }
  return chains;
}

// A sum of two values of one shape, at least one an int8 chain's output (a
// residual connection), and its ReLU: the nodes one qlinear_add replaces.
struct ResidualAdd {
  NodeId add = -1, relu = -1, last = -1;
};

std::vector<ResidualAdd> residual_adds(const Graph& g, const std::vector<ConvChain>& chosen) {
  const std::vector<int> uses = count_consumers(g);
  std::set<NodeId> chain_outputs;
  for (const ConvChain& c : chosen) chain_outputs.insert(c.last);
  std::vector<ResidualAdd> adds;
  for (const Node& n : g.nodes()) {
    if (n.op != Op::kAdd || n.inputs.size() != 2) continue;
    const Node &x = g.node(n.inputs[0]), &y = g.node(n.inputs[1]);
    if (x.type.shape != n.type.shape || y.type.shape != n.type.shape || x.op == Op::kConstant || y.op == Op::kConstant ||
        (!chain_outputs.count(x.id) && !chain_outputs.count(y.id)))
      continue;
    ResidualAdd r{n.id, -1, n.id};
    if (uses[n.id] == 1)
      for (const Node& reader : g.nodes())
        if (reader.op == Op::kRelu && reader.inputs[0] == n.id) r.relu = r.last = reader.id;
    adds.push_back(r);
  }
  return adds;
}

// Every node's value range on the samples, for the nodes asked.
std::map<NodeId, ValueRange> calibrate(const Graph& g, const std::set<NodeId>& nodes,
                                       const std::vector<std::vector<runtime::NDArray>>& samples,
                                       const CalibrationOptions& options) {
  std::map<NodeId, ValueHistogram> histograms;
  for (NodeId id : nodes) histograms.emplace(id, ValueHistogram{});
  for (const auto& sample : samples)
    interpret(g, sample, [&](const Node& n, const runtime::NDArray& v) {
      if (auto it = histograms.find(n.id); it != histograms.end()) it->second.add(v.data(), v.size());
    });
  std::map<NodeId, ValueRange> ranges;
  for (const auto& [id, h] : histograms) ranges[id] = calibrated_range(h, options);
  return ranges;
}

// Weights per output channel: q = round(w / s[f]) in [-most, most], s[f] = max |w[f]| / most.
struct QuantizedWeight {
  runtime::NDArray values, scales;
};

// power_of_two: one scale for the tensor, 2^ceil(log2(max |w| / most)).
QuantizedWeight quantize_weight(const runtime::NDArray& w, int most, bool power_of_two) {
  const auto m = static_cast<float>(most);
  const int64_t channels = w.shape()[0], per = w.size() / channels;
  QuantizedWeight q{runtime::NDArray(w.shape()), runtime::NDArray({channels})};
  float tensor_largest = 0;
  for (int64_t i = 0; i < w.size(); ++i) tensor_largest = std::max(tensor_largest, std::fabs(w.data()[i]));
  const float tensor_scale =
      tensor_largest > 0 ? std::exp2(std::ceil(std::log2(static_cast<double>(tensor_largest) / most))) : 1.0f;
  for (int64_t f = 0; f < channels; ++f) {
    float largest = 0;
    for (int64_t i = 0; i < per; ++i) largest = std::max(largest, std::fabs(w.data()[f * per + i]));
    const float scale = power_of_two ? tensor_scale : largest > 0 ? largest / m : 1.0f;
    q.scales.data()[f] = scale;
    for (int64_t i = 0; i < per; ++i)
      q.values.data()[f * per + i] = std::clamp(std::nearbyint(w.data()[f * per + i] / scale), -m, m);
  }
  return q;
}

}  // namespace

Graph quantize_network(const Graph& g, const std::vector<std::vector<runtime::NDArray>>& samples,
                       const QuantizeOptions& options, QuantizeReport* report) {
  std::vector<ConvChain> chains = conv_chains(g);
  std::vector<ConvChain> chosen;
  for (size_t i = 0; i < chains.size(); ++i)
    if (!options.skip_layers.count(static_cast<int>(i))) chosen.push_back(chains[i]);
  if (report) {
    int all = 0;
    for (const Node& n : g.nodes()) all += n.op == Op::kConv2d;
    *report = {static_cast<int>(chains.size()), static_cast<int>(chosen.size()),
               all - static_cast<int>(chains.size())};
  }

  // The ranges of each chosen chain's input and output.
  std::map<NodeId, ops::QuantizeAttrs> quantization;
  const std::vector<ResidualAdd> adds = residual_adds(g, chosen);
  std::set<NodeId> observed;
  for (const ConvChain& c : chosen) observed.insert({g.node(c.conv).inputs[0], c.last});
  for (const ResidualAdd& a : adds) observed.insert({g.node(a.add).inputs[0], g.node(a.add).inputs[1], a.last});
  if (options.power_of_two) {
    const double scale = options.global_scale / 128.0;
    int exponent = 0;
    if (options.global_scale <= 0 || std::frexp(scale, &exponent) != 0.5)
      throw Error("quantize: power-of-two scales need a global scale that is a power of two (seed 003's 8.0), got " +
                  ops::number_to_string(options.global_scale));
    for (NodeId id : observed) quantization[id] = {static_cast<float>(scale), 0, "int8"};
  } else if (options.global_scale > 0) {
    const auto scale = static_cast<float>(options.global_scale / 127.0);
    for (NodeId id : observed) quantization[id] = {scale, 128, "uint8"};
  } else if (!chosen.empty()) {
    if (samples.empty()) throw Error("quantize: calibration needs sample inputs (or a global scale)");
    for (const auto& [id, range] : calibrate(g, observed, samples, options.calibration))
      quantization[id] = activation_quantization(range);
  }

  std::map<NodeId, const ConvChain*> chain_of;  // every node of a chosen chain
  for (const ConvChain& c : chosen)
    for (NodeId id : {c.conv, c.bias, c.relu})
      if (id >= 0) chain_of[id] = &c;
  Rewriter r(g);
  std::map<NodeId, NodeId> quantized_value;  // old node -> its int8 value in the new graph
  auto quantized_input = [&](NodeId x) {
    if (auto it = quantized_value.find(x); it != quantized_value.end()) return it->second;
    const NodeId q = r.add(Op::named("quantize"), g.node(x).name + ".quantized", {r.mapped(x)}, quantization.at(x));
    quantized_value[x] = q;
    return q;
  };
  std::map<NodeId, const ResidualAdd*> add_of;  // every node of a residual add
  for (const ResidualAdd& a : adds)
    for (NodeId id : {a.add, a.relu})
      if (id >= 0) add_of[id] = &a;
  for (const Node& n : g.nodes()) {
    // A max pooling of an int8 value pools the int8 value: its maximum is the
    // quantized maximum, in the same scale and zero point.
    if (n.op == Op::kMaxPool2d && quantized_value.count(n.inputs[0])) {
      const ops::QuantizeAttrs q = quantization.at(n.inputs[0]);
      const NodeId pooled = r.add(n.op, n.name + ".int8", {quantized_value.at(n.inputs[0])}, n.attrs);
      quantized_value[n.id] = pooled;
      quantization[n.id] = q;
      r.replace(n.id, r.add(Op::named("dequantize"), n.name, {pooled}, q));
      continue;
    }
    if (auto in_add = add_of.find(n.id); in_add != add_of.end()) {
      const ResidualAdd& a = *in_add->second;
      if (n.id != a.add) continue;  // the ReLU is the qlinear_add's
      ops::QLinearAddAttrs attrs;
      attrs.a = quantization.at(n.inputs[0]);
      attrs.b = quantization.at(n.inputs[1]);
      attrs.y = quantization.at(a.last);
      attrs.relu = a.relu >= 0;
      const std::string& name = g.node(a.last).name;
      const NodeId q = r.add(Op::named("qlinear_add"), name + ".int8",
                             {quantized_input(n.inputs[0]), quantized_input(n.inputs[1])}, attrs);
      quantized_value[a.last] = q;
      r.replace(a.last, r.add(Op::named("dequantize"), name, {q}, attrs.y));
      continue;
    }
    auto in_chain = chain_of.find(n.id);
    if (in_chain == chain_of.end()) {
      r.copy(n);
      continue;
    }
    const ConvChain& c = *in_chain->second;
    if (n.id != c.conv) continue;  // the bias and ReLU are the qlinear_conv2d's
    const NodeId x = n.inputs[0];
    const ops::QuantizeAttrs& xq = quantization.at(x);
    const ops::QuantizeAttrs& yq = quantization.at(c.last);
    QuantizedWeight w = quantize_weight(*g.node(n.inputs[1]).value, options.weight_max, options.power_of_two);
    const int64_t channels = n.type.shape[1];
    runtime::NDArray bias({channels});
    for (int64_t f = 0; f < channels; ++f) {
      float b = 0;
      if (c.bias >= 0) {
        const Node& add = g.node(c.bias);
        b = g.node(add.inputs[0] == c.conv ? add.inputs[1] : add.inputs[0]).value->data()[f];
      }
      bias.data()[f] = static_cast<float>(ops::bias_in_units(b, xq.scale, w.scales.data()[f]));
    }
    ops::QLinearConv2dAttrs a;
    a.conv = n.attrs_as<ops::Conv2dAttrs>();
    a.x_scale = xq.scale, a.x_zero_point = xq.zero_point, a.x_dtype = xq.dtype;
    a.y_scale = yq.scale, a.y_zero_point = yq.zero_point, a.y_dtype = yq.dtype;
    a.relu = c.relu >= 0;
    a.power_of_two = options.power_of_two;
    if (a.relu && g.node(c.relu).op == Op::kClip) a.clip_max = g.node(c.relu).attrs_as<ops::ClipAttrs>().max;
    const std::string& name = g.node(c.last).name;
    const NodeId q = r.add(Op::named("qlinear_conv2d"), name + ".int8",
                           {quantized_input(x), r.add_constant(name + ".weight.int8", std::move(w.values), DataType::kInt8),
                            r.add_constant(name + ".weight_scale", std::move(w.scales)),
                            r.add_constant(name + ".bias.int32", std::move(bias), DataType::kInt32)},
                           a);
    quantized_value[c.last] = q;
    r.replace(c.last, r.add(Op::named("dequantize"), name, {q}, yq));
  }
  return eliminate_dead_nodes(r.finish());
}

}  // namespace tessera::graph
