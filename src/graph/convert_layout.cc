// convert_layout and cancel_layout_transforms (passes.h).
#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include <cmath>
#include <cstdlib>

#include "graph/channel_constant.h"
#include "graph/merged_groups.h"
#include "graph/passes.h"
#include "graph/rewriter.h"
#include "ops/depthwise_nchwc.h"
#include "ops/pad.h"
#include "ops/qlinear_batch_matmul.h"
#include "ops/qlinear_conv2d.h"
#include "ops/qlinear_dense.h"
#include "ops/tensor_layout.h"
#include "ops/transform.h"
#include "tessera/error.h"

namespace tessera::graph {

using ops::is_channel_blocked;
using ops::Layout;
using ops::layout_transform;
using ops::layout_transform_shape;
namespace {

std::string blocked(int64_t block) { return "NCHW" + std::to_string(block) + "c"; }

// The channel block for `channels` at a vector of `lanes`: the largest power
// of two up to `lanes` dividing them; where that fills less than a vector, a
// divisor up to two vectors whose vector instructions are fuller (24 channels
// at 16 lanes: 24, a vector and a half in two instructions, rather than 8,
// half of one; RegNet's 168 = 24 x 7). Code generation runs a vector loop of
// 24 as pieces of 16 and 8.
int64_t block_for(int64_t channels, int64_t lanes) {
  int64_t b = 1;
  while (b * 2 <= lanes && channels % (b * 2) == 0) b *= 2;
  if (b >= lanes) return b;
  const auto filled = [&](int64_t d) {
    const int64_t instructions = d / lanes + __builtin_popcountll(static_cast<uint64_t>(d % lanes));
    return static_cast<double>(d) / static_cast<double>(instructions * lanes);
  };
  int64_t best = b;
  for (int64_t d = lanes / 2 + 1; d <= 2 * lanes; ++d)
    if (channels % d == 0 && filled(d) > filled(best) + 1e-9) best = d;
  return best;
}

// Elementwise operators without a layout-bound attribute (bias_add names an
// axis) compute the same in any layout: blocks flow through them.
bool is_elementwise(Op op) {
  return op.definition().pattern == ops::FusionPattern::kElementwise && op != Op::kBiasAdd;
}


// The channel axis of a 4-D activation layout.
size_t channel_axis(const std::string& layout) { return layout == "NHWC" ? 3 : 1; }

runtime::NDArray transformed(const runtime::NDArray& value, const std::string& src, const std::string& dst) {
  const Layout s = Layout::parse(src), d = Layout::parse(dst);
  runtime::NDArray out(layout_transform_shape(value.shape(), s, d));
  layout_transform(value.data(), value.shape(), s, d, out.data());
  return out;
}

// A per-channel constant laid out for activations in `layout`: (C/b, 1, 1, b)
// for NCHW<b>c, (C) for NHWC. Both hold the values in channel order.
runtime::NDArray channels_in(const std::vector<float>& values, const std::string& layout) {
  const int64_t c = static_cast<int64_t>(values.size());
  Shape shape{c};
  if (layout != "NHWC") {
    const int64_t block = Layout::parse(layout).block_of('C');
    shape = {c / block, 1, 1, block};
  }
  runtime::NDArray out(shape);
  for (int64_t i = 0; i < c; ++i) out[i] = values[i];  // (c / b, 1, 1, c % b) is row-major c
  return out;
}

class LayoutConverter {
 public:
  LayoutConverter(const Graph& g, int64_t block, const std::map<std::string, ConvBlocks>& conv_blocks, bool winograd,
                  int int8_weight_limit)
      : g_(g), r_(g), block_(block), conv_blocks_(conv_blocks), winograd_(winograd),
        int8_weight_limit_(int8_weight_limit) {}

  Graph run() {
    const Op qlinear_conv2d = Op::named("qlinear_conv2d"), qlinear_dense = Op::named("qlinear_dense"),
             qlinear_batch_matmul = Op::named("qlinear_batch_matmul");
    for (const Node& n : g_.nodes()) {
      if (n.op == Op::kConv2d && convert_conv(n)) continue;
      if (n.op == qlinear_conv2d && convert_int8_conv(n)) continue;
      if (n.op == qlinear_dense && pack_int8_dense(n)) continue;
      if (n.op == qlinear_batch_matmul && int8_product_takes_byte_dot(n)) continue;
      if ((n.op == Op::kMaxPool2d || n.op == Op::kAvgPool2d) && pool_follows_into_blocks(n)) continue;
      if ((n.op == Op::kMaxPool2d || n.op == Op::kAvgPool2d) && n.attrs_as<Pool2dAttrs>().layout == "NHWC") {
        Pool2dAttrs a = n.attrs_as<Pool2dAttrs>();
        a.layout = "NCHW";
        wrap(n, "NHWC", "NCHW", a);
        continue;
      }
      if (n.op == Op::kGlobalAvgPool2d && global_pool_follows_into_blocks(n)) continue;
      if (n.op == Op::kGlobalAvgPool2d && n.attrs_as<GlobalPoolAttrs>().layout == "NHWC") {
        wrap(n, "NHWC", "NCHW", GlobalPoolAttrs{"NCHW"});
        continue;
      }
      if (is_elementwise(n.op) && follow_into_blocks(n)) continue;
      if (n.op == Op::kTranspose && transpose_as_layout(n)) continue;
      r_.copy(n);
    }
    return r_.finish();
  }

 private:
  NodeId transform(NodeId x, const std::string& src, const std::string& dst, const std::string& name) {
    return r_.add(Op::kLayoutTransform, name, {x}, LayoutTransformAttrs{src, dst});
  }

  // n (input 0 in `from`) computed in `to` instead, with transforms around it.
  void wrap(const Node& n, const std::string& from, const std::string& to, Attrs attrs) {
    std::vector<NodeId> inputs;
    for (NodeId in : n.inputs) inputs.push_back(r_.mapped(in));
    inputs[0] = transform(inputs[0], from, to, n.name + ".in");
    NodeId inner = r_.add(n.op, n.name, inputs, std::move(attrs));
    r_.replace(n.id, transform(inner, to, from, n.name + ".out"));
  }

  bool convert_conv(const Node& n) {
    const auto& a = n.attrs_as<Conv2dAttrs>();
    const Node& weight = g_.node(n.inputs[1]);
    const bool nchw = a.data_layout == "NCHW" && a.kernel_layout == "OIHW";
    const bool nhwc = a.data_layout == "NHWC" && a.kernel_layout == "HWIO";
    if ((!nchw && !nhwc) || weight.op != Op::kConstant) return false;
    const Shape& in = g_.node(n.inputs[0]).type.shape;
    const int64_t in_channels = in[channel_axis(a.data_layout)];
    const int64_t out_channels = n.type.shape[channel_axis(a.data_layout)];
    const bool depthwise = a.groups == in_channels && a.groups == out_channels;
    // Grouped, a block holds channels of one group: its blocks divide a
    // group's channels (the weight's layout transform then packs each
    // group's (O/groups, C/groups) slices as it packs any OIHW weight).
    // Groups narrower than a block merge into groups of a block
    // (graph/merged_groups.h). At 512 bits too, where four groups of 4 take
    // four times the products and two of 8 twice: on 2 Zen 4 cores
    // ResNeXt-50's kernels sum 2.6 % less so than in narrow blocks between
    // layout transforms.
    const int64_t merge =
        depthwise ? 1 : groups_to_merge(a.groups, in_channels / a.groups, out_channels / a.groups, block_);
    const int64_t groups = depthwise ? 1 : a.groups / merge;
    const int64_t group_in = in_channels / groups, group_out = out_channels / groups;

    int64_t oc_bn = block_for(group_out, block_);
    int64_t ic_bn = depthwise ? oc_bn : block_for(group_in, block_);
    if (auto chosen = conv_blocks_.find(n.name); chosen != conv_blocks_.end()) {
      const ConvBlocks& b = chosen->second;
      if (b.ic_bn <= 0 || b.oc_bn <= 0 || group_in % b.ic_bn != 0 || group_out % b.oc_bn != 0 ||
          (depthwise && b.ic_bn != b.oc_bn))
        throw Error(n.describe() + ": channel blocks " + std::to_string(b.ic_bn) + " and " + std::to_string(b.oc_bn) +
                    " do not divide its " + std::to_string(group_in) + " input and " + std::to_string(group_out) +
                    " output channels" + (groups > 1 ? " per group" : "") + (depthwise ? " (or differ: depthwise)" : ""));
      ic_bn = b.ic_bn;
      oc_bn = b.oc_bn;
    }
    // Depthwise weights (C, 1, KH, KW) pack as (C/b, 1, KH, KW, 1, b).
    const std::string kernel_layout =
        "OIHW" + std::to_string(depthwise ? 1 : ic_bn) + "i" + std::to_string(oc_bn) + "o";
    const runtime::NDArray merged =
        merge > 1 ? merge_groups(*weight.value, a.kernel_layout, a.groups, merge) : runtime::NDArray();
    const runtime::NDArray& weight_value = merge > 1 ? merged : *weight.value;
    NodeId w = r_.add_constant(weight.name + (merge > 1 ? ".merged." : ".") + kernel_layout,
                               transformed(weight_value, a.kernel_layout, kernel_layout));
    Conv2dAttrs blocked_attrs = a;
    blocked_attrs.groups = depthwise ? a.groups : groups;
    blocked_attrs.data_layout = blocked(ic_bn);
    blocked_attrs.kernel_layout = kernel_layout;
    if (winograd_ && !depthwise) {
      const Shape& w = weight.value->shape();  // OIHW or HWIO
      const Shape& o = n.type.shape;            // NCHW or NHWC
      const Shape nchw_output = nhwc ? Shape{o[0], o[3], o[1], o[2]} : o;
      if (winograd_reuses_weights(nchw_output))
        blocked_attrs.winograd_tile = winograd_tile_for(a, nhwc ? Shape{w[3], w[2], w[0], w[1]} : w, nchw_output);
    }
    NodeId x = transform(r_.mapped(n.inputs[0]), a.data_layout, blocked(ic_bn), n.name + ".in");
    NodeId conv = r_.add(Op::kConv2d, n.name, {x, w}, blocked_attrs);
    r_.replace(n.id, transform(conv, blocked(oc_bn), a.data_layout, n.name + ".out"));
    return true;
  }

  // An int8 convolution of unsigned bytes with constant weights and bias
  // (ops/qlinear_conv2d.h): blocked for the byte dot product, its weight
  // packed, the zero point's share of each output folded into its bias.
  // Whether the target's byte dot product computes these int8 weights
  // exactly: beyond its limit (one saturating pairs) kernels keep the plain
  // products.
  bool within_weight_limit(const runtime::NDArray& w) const { return within(w, int8_weight_limit_); }
  // Whether centered products of weights `w` are exact on the target: within
  // +-127, and each product (|x - 128| <= 128) no larger than those of
  // unsigned bytes within its limit (255 * limit), which it sums exactly.
  bool takes_centered(const runtime::NDArray& w) const {
    return 128 * 127 <= 255 * int8_weight_limit_ && within(w, 127);
  }
  static bool within(const runtime::NDArray& w, int most) {
    for (int64_t i = 0; i < w.size(); ++i)
      if (std::fabs(w[i]) > static_cast<float>(most)) return false;
    return true;
  }

  // Weights w (O, I, ...) as (O, 2I, ...): each output's hi = w / 2 truncated, then lo = w - hi; both
  // within +-64 where |w| <= 128.
  static runtime::NDArray weight_halves(const runtime::NDArray& w) {
    Shape shape = w.shape();
    shape[1] *= 2;
    runtime::NDArray halves(shape);
    const int64_t outputs = shape[0], per_output = w.size() / outputs;
    for (int64_t f = 0; f < outputs; ++f)
      for (int64_t i = 0; i < per_output; ++i) {
        const float v = w[f * per_output + i], hi = std::trunc(v / 2);
        halves[(2 * f) * per_output + i] = hi;
        halves[(2 * f + 1) * per_output + i] = v - hi;
      }
    return halves;
  }

  // An int8 matrix product of unsigned bytes and constant weights: its weight
  // stored packed for the byte dot product. Weights beyond the target's limit
  // (a dot product saturating pairs) but within +-127, as onnxruntime's
  // symmetric ones are, take centered products (ops::QLinearDenseAttrs): a
  // signed byte times a weight, exact in such pairs, the bias gaining
  // 128 * sum_k w. Other weights beyond the limit are each the sum of two
  // within it, as a convolution's are (convert_int8_conv): the weight
  // (N, 2K) of hi = w / 2 truncated then lo = w - hi side by side, against
  // the input's bytes twice, (M, 2K); its bias keeps its fold of x's zero
  // point: each input byte meets hi + lo = w. (onnxruntime's int8 BERT-base
  // on AVX2 without VNNI: each plain product of its 128 tokens took ~200 ms,
  // its halves 3.4; the network 3345 -> 144 ms, float 137.)
  bool pack_int8_dense(const Node& n) {
    ops::QLinearDenseAttrs a = n.attrs_as<ops::QLinearDenseAttrs>();
    const Node& weight = g_.node(n.inputs[1]);
    if (a.packed || a.x_dtype != "uint8" || weight.op != Op::kConstant) return false;
    a.packed = true;
    if (within_weight_limit(*weight.value)) {
      copy_with(n, a);
      return true;
    }
    // Its bias already holds x's zero point's share: centered, it gains 128 * sum_k w.
    const Node& given_bias = g_.node(n.inputs[3]);
    runtime::NDArray bias;
    bool exact = false;
    if (given_bias.op == Op::kConstant && takes_centered(*weight.value))
      bias = folded_bias(*given_bias.value, *weight.value, -128, &exact);
    if (exact) {
      a.centered = true;
      const NodeId bb = r_.add_constant(given_bias.name + ".centered", std::move(bias), DataType::kInt32);
      r_.replace(n.id,
                 r_.add(n.op, n.name, {r_.mapped(n.inputs[0]), r_.mapped(n.inputs[1]), r_.mapped(n.inputs[2]), bb}, a));
      return true;
    }
    // Two halves would not do, or 2K no multiple of 4 (no byte lanes): the plain product.
    if (2 * int8_weight_limit_ < 128 || weight.value->shape()[1] % 2 != 0) return false;
    const NodeId x = r_.mapped(n.inputs[0]);
    const int64_t last = static_cast<int64_t>(g_.node(n.inputs[0]).type.shape.size()) - 1;
    const NodeId twice = r_.add(Op::kConcat, n.name + ".halves", {x, x}, ops::ConcatAttrs{last});
    const NodeId wh = r_.add_constant(weight.name + ".halves", weight_halves(*weight.value), DataType::kInt8);
    r_.replace(n.id, r_.add(n.op, n.name, {twice, wh, r_.mapped(n.inputs[2]), r_.mapped(n.inputs[3])}, a));
    return true;
  }

  // bias[f] - zero_point * sum(w[f]) for each output f of weight w (any
  // rank, outputs first): the zero point's share folded into an int8
  // kernel's bias. `exact`, if given: whether every sum lies within the
  // integers a float holds exactly (2^24; constants are stored as floats).
  static runtime::NDArray folded_bias(const runtime::NDArray& bias, const runtime::NDArray& w, int64_t zero_point,
                                      bool* exact = nullptr) {
    const std::vector<int64_t> share = ops::zero_point_share(w.data(), w.shape(), zero_point);
    runtime::NDArray folded({static_cast<int64_t>(share.size())});
    if (exact) *exact = true;
    for (size_t f = 0; f < share.size(); ++f) {
      const int64_t v = static_cast<int64_t>(bias.data()[f]) - share[f];
      if (exact && std::llabs(v) > (int64_t{1} << 24)) *exact = false;
      folded.data()[f] = static_cast<float>(v);
    }
    return folded;
  }

  // `n` as it is but for its attributes.
  void copy_with(const Node& n, ops::Attrs attrs) {
    Node changed = n;
    changed.attrs = std::move(attrs);
    r_.copy(changed);
  }

  // A product of two int8 activations: by the byte dot product where the
  // target's does not saturate pairs (its operands span every byte).
  bool int8_product_takes_byte_dot(const Node& n) {
    ops::QLinearBatchMatmulAttrs a = n.attrs_as<ops::QLinearBatchMatmulAttrs>();
    if (a.byte_dot || int8_weight_limit_ < 127 ||
        !ops::qlinear_batch_matmul_takes_byte_dot(g_.node(n.inputs[0]).type.shape, a))
      return false;
    a.byte_dot = true;
    copy_with(n, a);
    return true;
  }

  // Weights beyond the target's limit (a dot product saturating pairs,
  // |w| <= 64) are each the sum of two within it, w = hi + lo with hi = w / 2
  // truncated: the input's channels are read twice (its bytes copied side by
  // side), against hi and against lo: twice the products, each pair exact and
  // all of them by the dot product. (The NCHW kernel, exact too, took 1.6 s
  // for onnxruntime's ResNet-18 on AVX2 without VNNI.)
  bool convert_int8_conv(const Node& n) {
    const auto& a = n.attrs_as<ops::QLinearConv2dAttrs>();
    const Node& weight = g_.node(n.inputs[1]);
    const Node& bias = g_.node(n.inputs[3]);
    if (a.is_blocked() || weight.op != Op::kConstant || bias.op != Op::kConstant) return false;
    if (a.is_depthwise()) return convert_int8_depthwise(n, a, *weight.value);
    if (a.x_dtype != "uint8") return false;
    // Beyond the limit but within +-127 (onnxruntime's weights): centered
    // products, where the bias they fold stays exact; else two halves.
    runtime::NDArray folded;
    bool centered = false;
    const bool beyond = !within_weight_limit(*weight.value);
    if (beyond && takes_centered(*weight.value))
      folded = folded_bias(*bias.value, *weight.value, a.x_zero_point - 128, &centered);
    const bool split = beyond && !centered;
    if (split && 2 * int8_weight_limit_ < 128) return false;  // two halves would not do: keep the NCHW kernel
    if (!centered) folded = folded_bias(*bias.value, *weight.value, a.x_zero_point);
    const runtime::NDArray& w = *weight.value;
    // Input channels in whole lanes of 4: a first convolution's 3 take a
    // fourth, its bytes the zero point, its weights 0 (adding nothing).
    NodeId data = r_.mapped(n.inputs[0]);
    const Shape& given = w.shape();
    const int64_t lanes = (given[1] + 3) / 4 * 4;
    runtime::NDArray widened;
    if (lanes != given[1]) {
      widened = runtime::NDArray({given[0], lanes, given[2], given[3]});
      const int64_t taps = given[2] * given[3];
      for (int64_t f = 0; f < given[0]; ++f)
        std::copy(w.data() + f * given[1] * taps, w.data() + (f + 1) * given[1] * taps,
                  widened.data() + f * lanes * taps);
      ops::PadAttrs pad{{0, 0, 0, 0}, {0, lanes - given[1], 0, 0}, static_cast<float>(a.x_zero_point)};
      data = r_.add(Op::kPad, n.name + ".lanes", {data}, pad);
    }
    const runtime::NDArray& whole = lanes != given[1] ? widened : w;
    runtime::NDArray halves;
    if (split) halves = weight_halves(whole);
    const runtime::NDArray& oihw_weight = split ? halves : whole;
    const Shape& oihw = oihw_weight.shape();
    // Split: blocks of the input's own channels, so that it is read twice as
    // two copies of its blocks (no transform to NCHW and back around the copy).
    int64_t ic_bn = block_for(split ? lanes : oihw[1], block_), oc_bn = block_for(oihw[0], block_);
    if (auto chosen = conv_blocks_.find(n.name); chosen != conv_blocks_.end()) {
      ic_bn = chosen->second.ic_bn;
      oc_bn = chosen->second.oc_bn;
    }
    if (ic_bn % 4 != 0) ic_bn = 4;  // the channels divide into lanes of 4, if into nothing wider
    if (oihw[1] % ic_bn != 0 || oihw[0] % oc_bn != 0)
      throw Error(n.describe() + ": channel blocks " + std::to_string(ic_bn) + " and " + std::to_string(oc_bn) +
                  " do not divide its " + std::to_string(oihw[1]) + " input and " + std::to_string(oihw[0]) +
                  " output channels, or the input block is no multiple of 4");
    ops::QLinearConv2dAttrs blocked_attrs = a;
    blocked_attrs.conv.data_layout = blocked(ic_bn);
    blocked_attrs.conv.kernel_layout = ops::int8_kernel_layout(ic_bn, oc_bn);
    blocked_attrs.centered = centered;
    runtime::NDArray packed({oihw[0] / oc_bn, oihw[1] / ic_bn, oihw[2], oihw[3], ic_bn / 4, oc_bn, 4});
    const std::vector<float> values = ops::pack_int8_kernel(oihw_weight.data(), oihw, ic_bn, oc_bn);
    std::copy(values.begin(), values.end(), packed.data());
    const bool blocks_twice = split && lanes % ic_bn == 0;
    if (split && !blocks_twice) data = r_.add(Op::kConcat, n.name + ".halves", {data, data}, ops::ConcatAttrs{1});
    add_blocked_int8_conv(n, blocked_attrs, std::move(packed), std::move(folded), data, ic_bn, oc_bn, blocks_twice);
    return true;
  }

  // n computed by its blocked form (`attrs`) of `data` (n's input, in NCHW;
  // `twice`: its blocks then copied twice side by side), on its weight
  // packed, its bias `folded`: less the zero point's share of each output
  // channel (folded_bias: x_zp * sum(w[f]); centered, (x_zp - 128) *
  // sum(w[f])), layout transforms around it.
  void add_blocked_int8_conv(const Node& n, const ops::QLinearConv2dAttrs& attrs, runtime::NDArray packed,
                             runtime::NDArray folded, NodeId data, int64_t in_block, int64_t out_block,
                             bool twice = false) {
    const Node& weight = g_.node(n.inputs[1]);
    const Node& bias = g_.node(n.inputs[3]);
    const NodeId wb = r_.add_constant(weight.name + "." + attrs.conv.kernel_layout, std::move(packed), DataType::kInt8);
    const NodeId bb = r_.add_constant(bias.name + ".folded", std::move(folded), DataType::kInt32);
    NodeId x = transform(data, "NCHW", blocked(in_block), n.name + ".in");
    if (twice) x = r_.add(Op::kConcat, n.name + ".halves", {x, x}, ops::ConcatAttrs{1});
    const NodeId conv = r_.add(n.op, n.name, {x, wb, r_.mapped(n.inputs[2]), bb}, attrs);
    r_.replace(n.id, transform(conv, blocked(out_block), "NCHW", n.name + ".out"));
  }

  // A depthwise int8 convolution: blocked as the float one is (its weight
  // (C/b, 1, KH, KW, 1, b)), the zero point's share folded into its bias.
  // Each channel sums its own window, no dot product: any bytes, any weights.
  bool convert_int8_depthwise(const Node& n, const ops::QLinearConv2dAttrs& a, const runtime::NDArray& w) {
    const int64_t channels = w.shape()[0];
    int64_t bn = block_for(channels, block_);
    if (auto chosen = conv_blocks_.find(n.name); chosen != conv_blocks_.end()) bn = chosen->second.oc_bn;
    if (channels % bn != 0)
      throw Error(n.describe() + ": channel block " + std::to_string(bn) + " does not divide its " +
                  std::to_string(channels) + " channels");
    ops::QLinearConv2dAttrs blocked_attrs = a;
    blocked_attrs.conv.data_layout = blocked(bn);
    blocked_attrs.conv.kernel_layout = "OIHW1i" + std::to_string(bn) + "o";
    runtime::NDArray packed(ops::depthwise_nchwc_weight_shape(w.shape(), bn));
    const std::vector<float> values = ops::pack_depthwise_weight(w.data(), w.shape(), bn);
    std::copy(values.begin(), values.end(), packed.data());
    add_blocked_int8_conv(n, blocked_attrs, std::move(packed),
                          folded_bias(*g_.node(n.inputs[3]).value, w, a.x_zero_point), r_.mapped(n.inputs[0]), bn, bn);
    return true;
  }

  // A pooling of NCHW data that leaves NCHW<b>c through a transform runs in
  // NCHW<b>c: its window moves over whole channel blocks.
  bool pool_follows_into_blocks(const Node& n) {
    const Node in = r_.node(r_.mapped(n.inputs[0]));
    if (in.op != Op::kLayoutTransform || n.attrs_as<Pool2dAttrs>().layout != "NCHW") return false;
    const LayoutTransformAttrs t = in.attrs_as<LayoutTransformAttrs>();
    if (t.dst != "NCHW" || !is_channel_blocked(t.src)) return false;
    Pool2dAttrs a = n.attrs_as<Pool2dAttrs>();
    a.layout = t.src;
    NodeId inner = r_.add(n.op, n.name, {in.inputs[0]}, a);
    r_.replace(n.id, transform(inner, t.src, t.dst, n.name + ".out"));
    return true;
  }

  // A global pooling of NCHW data that leaves NCHW<b>c through a transform
  // pools the blocks: the transform then moves only the pooled channels
  // (the last convolution's 7x7 outputs otherwise go through a transform
  // whose innermost axis, 7 columns, no vector fills).
  bool global_pool_follows_into_blocks(const Node& n) {
    const Node in = r_.node(r_.mapped(n.inputs[0]));
    if (in.op != Op::kLayoutTransform || n.attrs_as<GlobalPoolAttrs>().layout != "NCHW") return false;
    const LayoutTransformAttrs t = in.attrs_as<LayoutTransformAttrs>();
    if (t.dst != "NCHW" || !is_channel_blocked(t.src)) return false;
    NodeId inner = r_.add(n.op, n.name, {in.inputs[0]}, GlobalPoolAttrs{t.src});
    r_.replace(n.id, transform(inner, t.src, t.dst, n.name + ".out"));
    return true;
  }

  // A transpose of 4-D data between NCHW and NHWC (ConvNeXt's permutes
  // around its layer norms) is that layout transform: cancel_layout_transforms
  // then joins it with the transform out of (or into) the convolutions'
  // blocks, one pass over the data instead of two.
  bool transpose_as_layout(const Node& n) {
    const std::vector<int64_t>& perm = n.attrs_as<ops::TransposeAttrs>().perm;
    if (n.type.shape.size() != 4) return false;
    const std::vector<int64_t> to_nhwc{0, 2, 3, 1}, to_nchw{0, 3, 1, 2};
    if (perm != to_nhwc && perm != to_nchw) return false;
    const bool nhwc = perm == to_nhwc;
    r_.replace(n.id, transform(r_.mapped(n.inputs[0]), nhwc ? "NCHW" : "NHWC", nhwc ? "NHWC" : "NCHW", n.name));
    return true;
  }

  // An elementwise node whose activation inputs all leave NCHW<b>c through a
  // transform runs in NCHW<b>c itself; constants follow it. An input of the
  // node's full shape leads; the others may broadcast over its rows and
  // columns (squeeze-excitation's per-channel scale, (1, C, 1, 1)), whose
  // blocked form (1, C/b, 1, 1, b) broadcasts the same way. Failing blocks,
  // an NCHW node whose lead leaves NHWC runs in NHWC (ConvNeXt's layer scale
  // after its permute back), so that the transforms on either side of it
  // can each join their neighbours.
  bool follow_into_blocks(const Node& n) {
    // Copies: adding nodes below may move the new graph's nodes.
    // The first input of the node's shape that a transform `leads` accepts made.
    const auto first_input = [&](auto leads) -> std::optional<Node> {
      for (NodeId old : n.inputs) {
        const Node in = r_.node(r_.mapped(old));
        if (in.op == Op::kLayoutTransform && in.type.shape == n.type.shape &&
            leads(in.attrs_as<LayoutTransformAttrs>()))
          return in;
      }
      return std::nullopt;
    };
    std::optional<Node> lead = first_input([](const LayoutTransformAttrs& t) {
      return (t.dst == "NCHW" || t.dst == "NHWC") && is_channel_blocked(t.src);
    });
    if (!lead) lead = first_input([](const LayoutTransformAttrs& t) { return t.dst == "NCHW" && t.src == "NHWC"; });
    if (!lead) return false;
    const LayoutTransformAttrs t = lead->attrs_as<LayoutTransformAttrs>();
    const size_t axis = channel_axis(t.dst);
    const Shape& full = lead->type.shape;
    const int64_t channels = full[axis];
    // Same rank and channels, every other axis its own or 1.
    const auto broadcasts = [&](const Shape& s) {
      if (s.size() != full.size() || s[axis] != channels) return false;
      for (size_t i = 0; i < s.size(); ++i)
        if (s[i] != full[i] && s[i] != 1) return false;
      return true;
    };

    std::vector<NodeId> inputs;
    for (NodeId old : n.inputs) {
      const Node in = r_.node(r_.mapped(old));
      if (in.op == Op::kLayoutTransform && in.attrs_as<LayoutTransformAttrs>().src == t.src &&
          in.attrs_as<LayoutTransformAttrs>().dst == t.dst && broadcasts(in.type.shape)) {
        inputs.push_back(in.inputs[0]);
      } else if (auto values = channel_values(in, 4, axis, channels)) {
        inputs.push_back(r_.add_constant(in.name + "." + t.src, channels_in(*values, t.src)));
      } else if (in.op != Op::kConstant && broadcasts(in.type.shape)) {
        // An activation in the plain layout (a residual from a pooling, say),
        // or leaving other blocks (a graph tuner's choice), is brought into
        // these; cancel_layout_transforms shares the transform with other
        // readers and joins a chain of two into one.
        inputs.push_back(transform(r_.mapped(old), t.dst, t.src, in.name + ".in"));
      } else {
        return false;  // an activation in another layout, or a constant of another shape
      }
    }
    NodeId inner = r_.add(n.op, n.name, inputs, n.attrs);
    r_.replace(n.id, transform(inner, t.src, t.dst, n.name + ".out"));
    return true;
  }

  const Graph& g_;
  Rewriter r_;
  int64_t block_;
  const std::map<std::string, ConvBlocks>& conv_blocks_;
  bool winograd_;
  int int8_weight_limit_;
};

}  // namespace

Graph convert_layout(const Graph& g, int64_t block, const std::map<std::string, ConvBlocks>& conv_blocks,
                     bool winograd, int int8_weight_limit) {
  if (block <= 0) return g;
  return eliminate_dead_nodes(LayoutConverter(g, block, conv_blocks, winograd, int8_weight_limit).run());
}

Graph cancel_layout_transforms(const Graph& g) {
  Rewriter r(g);
  // (input, src, dst) -> the one transform computing it
  std::map<std::tuple<NodeId, std::string, std::string>, NodeId> made;
  for (const Node& n : g.nodes()) {
    if (n.op == Op::kLayoutTransform) {
      const auto& a = n.attrs_as<LayoutTransformAttrs>();
      const auto key = std::make_tuple(r.mapped(n.inputs[0]), a.src, a.dst);
      if (auto it = made.find(key); it != made.end()) {
        r.replace(n.id, it->second);
        continue;
      }
      const Node& in = r.node(r.mapped(n.inputs[0]));
      if (in.op == Op::kLayoutTransform) {
        const NodeId source = in.inputs[0];
        const std::string src = in.attrs_as<LayoutTransformAttrs>().src;
        const std::string dst = n.attrs_as<LayoutTransformAttrs>().dst;
        if (src == dst) {
          r.replace(n.id, source);
          continue;
        }
        // Readers that each collapse a chain to the same transform share it.
        auto [it, added] = made.try_emplace(std::make_tuple(source, src, dst), NodeId{});
        if (added) it->second = r.add(Op::kLayoutTransform, n.name, {source}, LayoutTransformAttrs{src, dst});
        r.replace(n.id, it->second);
        continue;
      }
      made[key] = r.copy(n);
      continue;
    }
    r.copy(n);
  }
  return eliminate_dead_nodes(r.finish());
}

int64_t winograd_tile_for(const Conv2dAttrs& a, const Shape& oihw_weight, const Shape& nchw_output) {
  const Shape &w = oihw_weight, &out = nchw_output;
  const bool three_by_three = w.size() == 4 && w[2] == 3 && w[3] == 3;
  const bool unit_steps = a.stride_h == 1 && a.stride_w == 1 && a.dilation_h == 1 && a.dilation_w == 1;
  if (!three_by_three || !unit_steps || a.groups != 1 || out.size() < 4) return 0;
  if (w[0] < 16 || w[1] < 16 || out[2] < 6 || out[3] < 6) return 0;
  return 4;
}

bool winograd_reuses_weights(const Shape& nchw_output) {
  // The transformed weights (36 values per channel pair against the direct
  // 9) are read once a call and reused once per output tile.
  const Shape& out = nchw_output;
  return out.size() >= 4 && out[0] * ((out[2] + 3) / 4) * ((out[3] + 3) / 4) >= 16;
}

}  // namespace tessera::graph
