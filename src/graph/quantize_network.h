#pragma once
// The quantize pass (seed 003's relay.quantize): a float network's
// convolutions computed in int8. It runs on the optimized NCHW graph (batch
// norms folded, biases as constant adds): each ungrouped convolution with
// its bias and ReLU becomes
//
//   quantize(x) -> qlinear_conv2d(int8 weights per output channel, int32 bias, ReLU) -> dequantize
//
// with the activations' ranges calibrated on sample inputs (graph/
// calibration.h) and the weights quantized symmetrically per channel
// (scale = max |w[f]| / 127). Where one quantized convolution feeds the
// next, the dequantize -> quantize pair between them cancels (the same
// tensor, the same calibration): activations stay int8 between them. What
// is not a convolution stays float32 (dequantized around it).
#include <set>
#include <vector>

#include "graph/calibration.h"
#include "graph/graph.h"
#include "ops/quantize.h"

namespace tessera::graph {

struct QuantizeOptions {
  CalibrationOptions calibration;
  // Convolutions kept in float32, by their order in the graph (seed 003's
  // skip_conv_layers; the first one by default: it sees the raw input).
  std::set<int> skip_layers = {0};
  // > 0: every activation quantized to [-global_scale, global_scale] in int8
  // (seed 003's global_scale), no calibration: stored as uint8 with zero
  // point 128, the same values, as the byte dot product reads them.
  double global_scale = 0;
  // Seed 003's quantization for VTA, whose ALU requantizes by shifts only:
  // every scale a power of two. Activations int8 with zero point 0 and scale
  // global_scale / 128 (which must be a power of two: the seed's 8.0 gives
  // 2^-4); each weight tensor one scale, the power of two at or above
  // max |w| / 127; convolutions requantize by a rounding shift
  // (QLinearConv2dAttrs::power_of_two). Needs a global scale.
  bool power_of_two = false;
  // The weights' largest magnitude: 127, or 63 (7 bits) for a target whose
  // byte dot product saturates pairs of products (build::int8_weight_limit),
  // as onnxruntime's reduce_range does.
  int weight_max = 127;
};

struct QuantizeReport {
  int convolutions = 0;  // that could be quantized
  int quantized = 0;     // that were (the rest skipped)
  // Convolutions that cannot be: another layout than NCHW / OIHW (a model
  // compiled with --layout NHWC), grouped, Winograd, or a weight computed at
  // run time.
  int not_quantizable = 0;
};

// `samples`: calibration inputs, one vector per run (in graph.input_ids()
// order). Throws tessera::Error when a convolution to quantize has no
// constant weight, or no sample is given without a global scale.
Graph quantize_network(const Graph& graph, const std::vector<std::vector<runtime::NDArray>>& samples,
                       const QuantizeOptions& options, QuantizeReport* report = nullptr);

// The quantization of an activation range: uint8 with a zero point (0 for a
// range from 0, as after a ReLU), or int8 symmetric for a global scale.
ops::QuantizeAttrs activation_quantization(const ValueRange& range);

}  // namespace tessera::graph
