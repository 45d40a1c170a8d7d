#pragma once
// Graph packing for a GEMM accelerator (seed 003's vta.graph_pack): in a
// network quantized with power-of-two scales (QuantizeOptions::
// power_of_two), between the first max pooling and the global average
// pooling after it, each int8 convolution becomes a conv2d_packed
// (ops/conv2d_packed.h) on activations in NCHW<bn>n<bi>c and weights
// blocked (O/bo, I/bi, KH, KW, bo, bi), packed here once. A residual add
// whose operand is a packed convolution read by nothing else is fused into
// that convolution (its epilogue adds the other operand). Activations stay
// packed from one packed convolution to the next; a layout_transform (and a
// reshape, a view) packs a value entering the region and unpacks one
// leaving it (the CPU runs those, as it runs everything outside the region).
//
// A convolution that cannot be packed (channels not a multiple of the
// blocks, groups, dilation, uneven padding, a shift beyond 15, per-channel
// weight scales) stays as it is, named in the report.
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tessera::graph {

struct GraphPackOptions {
  int64_t block_batch = 1, block_in = 16, block_out = 16;  // the GEMM core's (vta::VtaConfig)
  std::string start_after = "max_pool2d";                  // packing starts after the first node of this operator
  std::string stop_at = "global_avg_pool2d";               // and stops at the first of this one after it
};

struct GraphPackReport {
  int convolutions = 0;                 // packed
  int residual_adds = 0;                // fused into a packed convolution
  std::vector<std::string> not_packed;  // "layer1.0.conv1.int8: <why>", int8 convolutions left in the region
};

// Throws tessera::Error when the graph has no `start_after` node or no
// `stop_at` node after it, or for batch blocks other than 1.
Graph graph_pack(const Graph& graph, const GraphPackOptions& options = {}, GraphPackReport* report = nullptr);

}  // namespace tessera::graph
