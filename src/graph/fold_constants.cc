// fold_constants and eliminate_dead_nodes (passes.h).
#include "graph/interpreter.h"
#include "graph/passes.h"
#include "graph/rewriter.h"

namespace tessera::graph {

Graph fold_constants(const Graph& g) {
  Rewriter r(g);
  for (const Node& n : g.nodes()) {
    bool all_constant = n.op != Op::kInput && n.op != Op::kConstant && !n.inputs.empty();
    for (NodeId in : n.inputs) all_constant = all_constant && r.node(r.mapped(in)).op == Op::kConstant;
    if (!all_constant) {
      r.copy(n);
      continue;
    }
    // Evaluated on the new graph's constants, which earlier folds produced.
    Node probe = n;
    std::vector<const runtime::NDArray*> args;
    for (NodeId& in : probe.inputs) {
      in = r.mapped(in);
      args.push_back(r.node(in).value.get());
    }
    r.replace(n.id, r.add_constant(n.name, evaluate(g, n, args), n.type.dtype));
  }
  return r.finish();
}

Graph eliminate_dead_nodes(const Graph& g) {
  std::vector<bool> live(g.size(), false);
  for (NodeId out : g.outputs()) live[out] = true;
  for (NodeId id = static_cast<NodeId>(g.size()) - 1; id >= 0; --id)
    if (live[id])
      for (NodeId in : g.node(id).inputs) live[in] = true;
  // Inputs stay even when unused: they are the model's signature.
  Rewriter r(g);
  for (const Node& n : g.nodes())
    if (live[n.id] || n.op == Op::kInput) r.copy(n);
  return r.finish();
}

}  // namespace tessera::graph
