// The algorithm of a GPU network's convolutions (passes.h), chosen on their
// attributes before the kernels form: choose_implicit_gemm computes the
// ungrouped NCHW and NHWC convolutions of constant weights as one matrix product each
// (ops/conv2d_implicit_gemm.h), the form whose tiles tensor cores run;
// choose_nchw_winograd runs the 3x3 stride-1 ones winograd_tile_for picks
// as Winograd in NCHW (ops/winograd.h), their weights stored transformed.
// Depthwise and grouped convolutions, and those in other layouts, stay direct.
#include <functional>
#include <optional>

#include "graph/passes.h"
#include "graph/rewriter.h"
#include "ops/conv2d.h"

namespace tessera::graph {
namespace {

// Each convolution given the attributes `choose` returns for it (nothing:
// kept as it is); every other node copied.
Graph rewrite_convolutions(const Graph& g,
                           const std::function<std::optional<ops::Conv2dAttrs>(const Node&, ops::Conv2dAttrs)>& choose) {
  Rewriter r(g);
  for (const Node& n : g.nodes()) {
    const std::optional<ops::Conv2dAttrs> chosen =
        n.op == Op::kConv2d ? choose(n, n.attrs_as<ops::Conv2dAttrs>()) : std::nullopt;
    if (!chosen) {
      r.copy(n);
      continue;
    }
    std::vector<NodeId> inputs;
    for (NodeId in : n.inputs) inputs.push_back(r.mapped(in));
    r.replace(n.id, r.add(Op::kConv2d, n.name, inputs, *chosen));
  }
  return r.finish();
}

bool ungrouped_nchw(const ops::Conv2dAttrs& a) {
  return a.data_layout == "NCHW" && a.kernel_layout == "OIHW" && a.groups == 1;
}

bool ungrouped_nhwc(const ops::Conv2dAttrs& a) {
  return a.data_layout == "NHWC" && a.kernel_layout == "HWIO" && a.groups == 1;
}

}  // namespace

Graph choose_implicit_gemm(const Graph& g, const ImplicitGemmChoice& choice) {
  return rewrite_convolutions(g, [&](const Node& n, ops::Conv2dAttrs a) -> std::optional<ops::Conv2dAttrs> {
    // The weight must be a constant: in NCHW the build stores it OHWI
    // (ops/conv2d_implicit_gemm.h); NHWC's product reads HWIO as it is.
    const Node& weight = g.node(n.inputs.at(1));
    const bool nhwc = ungrouped_nhwc(a);
    if ((!ungrouped_nchw(a) && !nhwc) || a.implicit_gemm || a.winograd_tile > 0 || weight.op != Op::kConstant)
      return std::nullopt;
    // In NCHW the small ones stay direct (schedule::gpu_conv2d_schedule
    // tiles them); NHWC has no direct GPU schedule but the default one, an
    // output a thread, so every one of its convolutions takes the product.
    const Shape& out = n.type.shape;  // N, F, OH, OW
    if (!nhwc && (out[2] * out[3] < choice.min_image || out[0] * out[2] * out[3] < choice.min_positions))
      return std::nullopt;
    a.implicit_gemm = true;
    return a;
  });
}

Graph choose_nchw_winograd(const Graph& g) {
  return rewrite_convolutions(g, [&g](const Node& n, ops::Conv2dAttrs a) -> std::optional<ops::Conv2dAttrs> {
    // The weight must be a constant: the build stores it transformed.
    const Node& weight = g.node(n.inputs.at(1));
    if (!ungrouped_nchw(a) || a.implicit_gemm || a.winograd_tile > 0 || weight.op != Op::kConstant) return std::nullopt;
    a.winograd_tile = winograd_tile_for(a, weight.type.shape, n.type.shape);
    if (a.winograd_tile == 0) return std::nullopt;
    return a;
  });
}

}  // namespace tessera::graph
