// The pass pipeline (passes.h): one list, each pass logged under TESSERA_LOG=graph.
#include "graph/passes.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "graph/printer.h"
#include "graph/shape_inference.h"

namespace tessera::graph {
namespace {

bool logging_graph() {
  const char* log = std::getenv("TESSERA_LOG");
  return log != nullptr && std::strstr(log, "graph") != nullptr;
}

}  // namespace

Graph optimize(const Graph& graph, const PassOptions& options) {
  using Pass = std::function<Graph(const Graph&)>;
  std::vector<std::pair<const char*, Pass>> pipeline = {
      {"fuse_quantized_operators", fuse_quantized_operators},
      {"simplify_inference", simplify_inference},
      {"recognize_layer_norm", [](const Graph& g) { return eliminate_dead_nodes(recognize_layer_norm(g)); }},
      {"recognize_gelu", [](const Graph& g) { return eliminate_dead_nodes(recognize_gelu(g)); }},
      {"fold_batch_norm", options.fold_batch_norm ? Pass(fold_batch_norm) : Pass([](const Graph& g) { return g; })},
      {"fold_constants", fold_constants},
      {"move_elementwise_before_reshape", move_elementwise_before_reshape},
      {"recognize_attention", [](const Graph& g) { return eliminate_dead_nodes(recognize_attention(g)); }},
      {"compose_transposes", [](const Graph& g) { return eliminate_dead_nodes(compose_transposes(g)); }},
      {"attention_sequence_first", [](const Graph& g) { return eliminate_dead_nodes(attention_sequence_first(g)); }},
      {"combine_qkv_projections", [](const Graph& g) { return eliminate_dead_nodes(combine_qkv_projections(g)); }},
      {"convert_layout", [&](const Graph& g) { return convert_layout(g, options.block, options.conv_blocks, options.winograd, options.int8_weight_limit); }},
      {"cancel_layout_transforms", cancel_layout_transforms},
      {"choose_implicit_gemm",
       [&](const Graph& g) { return options.implicit_gemm.on ? choose_implicit_gemm(g, options.implicit_gemm) : g; }},
      {"choose_nchw_winograd", options.nchw_winograd ? Pass(choose_nchw_winograd) : Pass([](const Graph& g) { return g; })},
      {"fold_constants", fold_constants},
      {"eliminate_dead_nodes", eliminate_dead_nodes},
  };
  const bool log = logging_graph();
  Graph g = graph;
  for (const auto& [name, pass] : pipeline) {
    g = pass(g);
    infer_shapes(g);  // every pass's output must still type-check
    if (log) std::fprintf(stderr, "=== after %s (%zu nodes) ===\n%s\n", name, g.size(), print_graph(g).c_str());
  }
  return g;
}

}  // namespace tessera::graph
