#include "graph/fuse.h"

#include "ops/tensor_layout.h"
#include "graph/rewriter.h"

namespace tessera::graph {

using ops::is_channel_blocked;
using ops::Layout;
using ops::layout_transform;
using ops::layout_transform_shape;
namespace {

bool is_elementwise(Op op) { return op.definition().pattern == ops::FusionPattern::kElementwise; }

// Anchors whose kernels take an elementwise epilogue.
bool takes_epilogue(Op op) { return op.definition().pattern == ops::FusionPattern::kAnchor || is_elementwise(op); }

// A blocked depthwise 3x3 convolution with padding 1, whose output has at
// least `min_rows` rows.
bool is_blocked_depthwise_3x3(const Graph& g, const Node& n, int64_t min_rows) {
  if (n.op != Op::kConv2d || !is_depthwise(g, n)) return false;
  const auto& a = n.attrs_as<Conv2dAttrs>();
  const Shape& w = g.node(n.inputs[1]).type.shape;
  return is_channel_blocked(a.data_layout) && a.winograd_tile == 0 && w[2] == 3 && w[3] == 3 && a.pad_top == 1 &&
         a.pad_left == 1 && a.pad_bottom == 1 && a.pad_right == 1 && a.dilation_h == 1 && a.dilation_w == 1 &&
         n.type.shape[2] >= min_rows;
}

// A blocked 1x1 convolution over flattened positions (stride 1, no padding).
bool is_blocked_projection(const Graph& g, const Node& n) {
  if (n.op != Op::kConv2d || is_depthwise(g, n)) return false;
  const auto& a = n.attrs_as<Conv2dAttrs>();
  const Shape& w = g.node(n.inputs[1]).type.shape;
  return is_channel_blocked(a.data_layout) && a.groups == 1 && a.winograd_tile == 0 && w[2] == 1 && w[3] == 1 &&
         a.stride_h == 1 && a.stride_w == 1 && a.pad_top == 0 && a.pad_left == 0 && a.pad_bottom == 0 &&
         a.pad_right == 0;
}

}  // namespace

std::vector<FusedGroup> fuse_operators(const Graph& g, const FuseOptions& options) {
  const std::vector<int> consumers = count_consumers(g);
  std::vector<int> group_of(g.size(), -1);
  std::vector<FusedGroup> groups;
  for (const Node& n : g.nodes()) {
    if (n.op.definition().pattern == ops::FusionPattern::kSource) continue;
    if (is_elementwise(n.op)) {
      // Join the group whose last node is one of our inputs, read by us alone,
      // of our own shape (no broadcasting grows it).
      for (NodeId in : n.inputs) {
        const int gi = group_of[in];
        if (gi < 0 || groups[gi].output() != in || consumers[in] != 1) continue;
        if (g.node(in).type.shape != n.type.shape || !takes_epilogue(g.node(groups[gi].anchor()).op)) continue;
        // Every other input must be computed before this group's kernel runs
        // (by an earlier group, or given): groups run in their order. A
        // reshape of a computed value is its bytes (a view, no kernel):
        // ready with them (compile makes the view when the kernel reads it).
        bool ready = true;
        for (NodeId other : n.inputs) {
          while (g.node(other).op == Op::kReshape && g.node(g.node(other).inputs[0]).op != Op::kConstant)
            other = g.node(other).inputs[0];
          if (other != in && group_of[other] >= gi) ready = false;
        }
        if (!ready) continue;
        groups[gi].nodes.push_back(n.id);
        group_of[n.id] = gi;
        break;
      }
      if (group_of[n.id] >= 0) continue;
    }
    if (options.depthwise_projection_min_rows > 0 && is_blocked_projection(g, n)) {
      // Join the depthwise group (anchor and at least its bias) that only we read.
      const NodeId in = n.inputs[0];
      const int gi = group_of[in];
      if (gi >= 0 && groups[gi].output() == in && consumers[in] == 1 && groups[gi].nodes.size() > 1 &&
          groups[gi].projection < 0 &&
          is_blocked_depthwise_3x3(g, g.node(groups[gi].anchor()), options.depthwise_projection_min_rows)) {
        groups[gi].nodes.push_back(n.id);
        groups[gi].projection = n.id;
        group_of[n.id] = gi;
        continue;
      }
    }
    group_of[n.id] = static_cast<int>(groups.size());
    groups.push_back(FusedGroup{{n.id}});
  }
  return groups;
}

}  // namespace tessera::graph
