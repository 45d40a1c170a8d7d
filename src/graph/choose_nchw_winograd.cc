// choose_nchw_winograd (passes.h): the 3x3 stride-1 NCHW convolutions worth
// running as Winograd (winograd_tile_for) marked with their output tile; the
// build then stores their weights transformed (ops/winograd.h). Convolutions
// computed as one matrix product, and those in other layouts, stay as they are.
#include "graph/passes.h"
#include "graph/rewriter.h"
#include "ops/conv2d.h"

namespace tessera::graph {

Graph choose_nchw_winograd(const Graph& g) {
  Rewriter r(g);
  for (const Node& n : g.nodes()) {
    if (n.op != Op::kConv2d) {
      r.copy(n);
      continue;
    }
    ops::Conv2dAttrs a = n.attrs_as<ops::Conv2dAttrs>();
    const Node& weight = g.node(n.inputs.at(1));
    const bool eligible = a.data_layout == "NCHW" && a.kernel_layout == "OIHW" && !a.implicit_gemm &&
                          a.winograd_tile == 0 && weight.op == Op::kConstant;
    const int64_t tile = eligible ? winograd_tile_for(a, weight.type.shape, n.type.shape) : 0;
    if (tile == 0) {
      r.copy(n);
      continue;
    }
    a.winograd_tile = tile;
    std::vector<NodeId> inputs;
    for (NodeId in : n.inputs) inputs.push_back(r.mapped(in));
    r.replace(n.id, r.add(Op::kConv2d, n.name, inputs, a));
  }
  return r.finish();
}

}  // namespace tessera::graph
