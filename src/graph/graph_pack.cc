#include "graph/graph_pack.h"

#include <fmt/format.h>

#include <bit>
#include <map>

#include "graph/passes.h"
#include "graph/rewriter.h"
#include "ops/conv2d_packed.h"
#include "ops/qlinear_add.h"
#include "ops/qlinear_conv2d.h"
#include "ops/quantize.h"
#include "ops/requantize.h"
#include "ops/transform.h"
#include "tessera/error.h"

namespace tessera::graph {

namespace {

// The conv2d_packed of an int8 convolution, or why there is none.
struct Packing {
  ops::Conv2dPackedAttrs attrs;
  std::string why_not;  // empty when it packs
};

Packing pack_convolution(const Graph& g, const Node& n, const GraphPackOptions& o) {
  const auto& a = n.attrs_as<ops::QLinearConv2dAttrs>();
  const auto no = [](std::string why) { return Packing{{}, std::move(why)}; };
  if (!a.power_of_two) return no("its scales are not powers of two (quantize with power-of-two scales)");
  const ops::Conv2dAttrs& c = a.conv;
  if (a.is_blocked() || c.groups != 1) return no("grouped or already blocked");
  if (c.dilation_h != 1 || c.dilation_w != 1) return no("dilated");
  if (c.pad_top != c.pad_bottom || c.pad_left != c.pad_right) return no("padded unevenly");
  if (a.x_dtype != "int8" || a.y_dtype != "int8" || a.x_zero_point != 0 || a.y_zero_point != 0)
    return no("not int8 with zero point 0 in and out");
  for (size_t i = 1; i < 4; ++i)
    if (g.node(n.inputs[i]).op != Op::kConstant) return no("its weight, scales or bias are computed at run time");
  const Shape& x = g.node(n.inputs[0]).type.shape;
  const Shape& w = g.node(n.inputs[1]).type.shape;
  if (x[0] % o.block_batch || x[1] % o.block_in || w[0] % o.block_out)
    return no(fmt::format("batch {}, {} input and {} output channels are not multiples of the blocks {}, {}, {}", x[0],
                          x[1], w[0], o.block_batch, o.block_in, o.block_out));
  const runtime::NDArray& scales = *g.node(n.inputs[2]).value;
  for (int64_t f = 1; f < scales.size(); ++f)
    if (scales.data()[f] != scales.data()[0]) return no("its weight scales differ by channel");
  int64_t divisor = 0;
  try {
    divisor = ops::power_of_two_divisor(a.x_scale, scales.data()[0], a.y_scale, n.name);
  } catch (const Error& e) {
    return no(e.what());
  }
  Packing p;
  ops::Conv2dPackedAttrs& pa = p.attrs;
  pa.batch = x[0], pa.in_channels = x[1], pa.height = x[2], pa.width = x[3], pa.out_channels = w[0];
  pa.kernel_h = w[2], pa.kernel_w = w[3], pa.stride_h = c.stride_h, pa.stride_w = c.stride_w;
  pa.pad_h = c.pad_top, pa.pad_w = c.pad_left;
  pa.block_batch = o.block_batch, pa.block_in = o.block_in, pa.block_out = o.block_out;
  pa.bias = true;
  pa.shift = std::countr_zero(static_cast<uint64_t>(divisor));
  const auto [lo, hi] = a.requantization().saturation("qlinear_conv2d");
  pa.clip_min = static_cast<int32_t>(lo), pa.clip_max = static_cast<int32_t>(hi);
  try {
    pa.validate();
  } catch (const Error& e) {
    return no(e.what());
  }
  return p;
}

// A residual add the accelerator's epilogue can do: one scale and zero point 0 throughout (plain int8 sums).
bool adds_plainly(const ops::QLinearAddAttrs& a) {
  for (const ops::QuantizeAttrs* q : {&a.a, &a.b, &a.y})
    if (q->dtype != "int8" || q->zero_point != 0 || q->scale != a.y.scale) return false;
  return true;
}

// OIHW values (integers in floats) as (O/bo, I/bi, KH, KW, bo, bi).
runtime::NDArray pack_weight(const runtime::NDArray& oihw, int64_t bo, int64_t bi) {
  const Shape& s = oihw.shape();
  const int64_t O = s[0], I = s[1], KH = s[2], KW = s[3];
  runtime::NDArray packed(Shape{O / bo, I / bi, KH, KW, bo, bi});
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i)
      for (int64_t y = 0; y < KH; ++y)
        for (int64_t x = 0; x < KW; ++x)
          packed.data()[(((((o / bo) * (I / bi) + i / bi) * KH + y) * KW + x) * bo + o % bo) * bi + i % bi] =
              oihw.data()[((o * I + i) * KH + y) * KW + x];
  return packed;
}

}  // namespace

Graph graph_pack(const Graph& g, const GraphPackOptions& o, GraphPackReport* report) {
  if (o.block_batch != 1)
    throw Error(fmt::format("graph_pack: batch blocks of {} are not packed yet (the seed's configuration has 1)",
                            o.block_batch));
  if (o.block_in != o.block_out)
    throw Error(
        fmt::format("graph_pack: activations pass from one packed convolution to the next, so block_in ({}) "
                    "must equal block_out ({})",
                    o.block_in, o.block_out));
  NodeId start = -1, stop = -1;
  for (const Node& n : g.nodes()) {
    if (start < 0 && op_name(n.op) == o.start_after)
      start = n.id;
    else if (start >= 0 && op_name(n.op) == o.stop_at) {
      stop = n.id;
      break;
    }
  }
  if (start < 0) throw Error("graph_pack: the network has no " + o.start_after + " to start packing after");
  if (stop < 0) throw Error("graph_pack: the network has no " + o.stop_at + " after its first " + o.start_after);

  GraphPackReport r;
  std::map<NodeId, ops::Conv2dPackedAttrs> convs;  // packed, by old id
  for (NodeId id = start + 1; id < stop; ++id) {
    const Node& n = g.node(id);
    if (op_name(n.op) != "qlinear_conv2d") continue;
    Packing p = pack_convolution(g, n, o);
    if (p.why_not.empty())
      convs.emplace(id, p.attrs);
    else
      r.not_packed.push_back(n.name + ": " + p.why_not);
  }
  // Residual adds fused into the later of their packed operands (the other is computed by then).
  const std::vector<int> uses = count_consumers(g);
  std::map<NodeId, NodeId> conv_of_add, residual_of_conv;
  for (NodeId id = start + 1; id < stop; ++id) {
    const Node& n = g.node(id);
    if (op_name(n.op) != "qlinear_add" || !adds_plainly(n.attrs_as<ops::QLinearAddAttrs>())) continue;
    for (size_t side : {size_t{1}, size_t{0}}) {
      const NodeId conv = n.inputs[side], other = n.inputs[1 - side];
      if (!convs.count(conv) || uses[conv] != 1 || residual_of_conv.count(conv) || conv < other ||
          g.node(other).type.shape != n.type.shape)
        continue;
      const auto [lo, hi] = ops::output_range("qlinear_add", "int8", 0, n.attrs_as<ops::QLinearAddAttrs>().relu);
      ops::Conv2dPackedAttrs& a = convs.at(conv);
      a.residual = true, a.residual_clip_min = static_cast<int32_t>(lo), a.residual_clip_max = static_cast<int32_t>(hi);
      conv_of_add[id] = conv, residual_of_conv[conv] = other;
      ++r.residual_adds;
      break;
    }
  }

  Rewriter w(g);
  // With batch blocks of 1, NCHW1n<b>c holds NCHW<b>c's bytes with a unit
  // axis: a layout_transform and a reshape (a view) pack, and unpack.
  const std::string blocked = fmt::format("NCHW{}c", o.block_in);
  std::map<NodeId, NodeId> packed;  // old value -> the new node holding it packed
  const auto packed_value = [&](NodeId x) {
    if (auto it = packed.find(x); it != packed.end()) return it->second;
    const Shape& s = g.node(x).type.shape;
    const NodeId t = w.add(Op::named("layout_transform"), g.node(x).name + ".blocked", {w.mapped(x)},
                           ops::LayoutTransformAttrs{"NCHW", blocked});
    const NodeId p = w.add(Op::named("reshape"), g.node(x).name + ".packed", {t},
                           ops::ReshapeAttrs{{s[0], s[1] / o.block_in, s[2], s[3], 1, o.block_in}});
    packed[x] = p;
    return p;
  };
  for (const Node& n : g.nodes()) {
    if (conv_of_add.count(n.id)) continue;  // its convolution computes it
    const auto c = convs.find(n.id);
    if (c == convs.end()) {
      w.copy(n);
      continue;
    }
    const ops::Conv2dPackedAttrs& a = c->second;
    std::vector<NodeId> inputs = {
        packed_value(n.inputs[0]),
        w.add_constant(n.name + ".weight.packed", pack_weight(*g.node(n.inputs[1]).value, a.block_out, a.block_in),
                       DataType::kInt8),
        w.mapped(n.inputs[3])};
    NodeId value = n.id;  // the old node whose value this computes: the fused add's, if any
    if (a.residual) {
      inputs.push_back(packed_value(residual_of_conv.at(n.id)));
      for (const auto& [add, conv] : conv_of_add)
        if (conv == n.id) value = add;
    }
    const NodeId q = w.add(Op::named("conv2d_packed"), g.node(value).name + ".packed", std::move(inputs), a);
    packed[value] = q;
    const Shape out = a.output_shape();
    const NodeId blocked_out = w.add(Op::named("reshape"), g.node(value).name + ".blocked", {q},
                                     ops::ReshapeAttrs{{out[0], out[1], out[2], out[3], out[5]}});
    w.replace(value, w.add(Op::named("layout_transform"), g.node(value).name + ".unpacked", {blocked_out},
                           ops::LayoutTransformAttrs{blocked, "NCHW"}));
    ++r.convolutions;
  }
  if (report) *report = r;
  return eliminate_dead_nodes(w.finish());
}

}  // namespace tessera::graph
