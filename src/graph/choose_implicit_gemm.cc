// choose_implicit_gemm (passes.h): the ungrouped NCHW convolutions of a
// network computed as one matrix product each (ops/conv2d_implicit_gemm.h),
// the form whose tiles tensor cores run. Depthwise and grouped convolutions,
// and those in other layouts, stay direct.
#include "graph/passes.h"
#include "graph/rewriter.h"
#include "ops/conv2d.h"

namespace tessera::graph {

Graph choose_implicit_gemm(const Graph& g) {
  Rewriter r(g);
  for (const Node& n : g.nodes()) {
    if (n.op != Op::kConv2d) {
      r.copy(n);
      continue;
    }
    ops::Conv2dAttrs a = n.attrs_as<ops::Conv2dAttrs>();
    if (a.data_layout != "NCHW" || a.kernel_layout != "OIHW" || a.groups != 1 || a.implicit_gemm) {
      r.copy(n);
      continue;
    }
    a.implicit_gemm = true;
    std::vector<NodeId> inputs;
    for (NodeId in : n.inputs) inputs.push_back(r.mapped(in));
    r.replace(n.id, r.add(Op::kConv2d, n.name, inputs, a));
  }
  return r.finish();
}

}  // namespace tessera::graph
