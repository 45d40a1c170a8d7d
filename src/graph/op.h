#pragma once
// The operator kinds of a graph node, and their names as printed and parsed
// ("conv2d", "batch_norm", ...): the vocabulary shared by the zoo, the ONNX
// importer, the passes and `tessera show`.
#include <string>
#include <vector>

namespace tessera::graph {

enum class Op {
  kInput,        // a graph input (fed at run time)
  kConstant,     // a weight: its value lives in the node
  kConv2d,       // groups, dilation, asymmetric pads; depthwise when groups == channels
  kDense,        // x (M, K) . W (N, K)^T
  kMatmul,       // a (..., K) . b (K, N)
  kBatchMatmul,  // a (B, M, K) . b (B, N, K)^T
  kBatchNorm,    // inference: x, gamma, beta, mean, var
  kBiasAdd,
  kAdd,
  kMultiply,
  kRelu,
  kClip,
  kSigmoid,
  kMaxPool2d,
  kAvgPool2d,
  kGlobalAvgPool2d,
  kConcat,
  kReshape,
  kFlatten,
  kTranspose,
  kPad,
  kSoftmax,
  kDropout,  // identity at inference
  kLayoutTransform,
};

// "conv2d", "global_avg_pool2d", ...
const std::string& op_name(Op op);
// The inverse of op_name; throws tessera::Error listing the known names.
Op op_from_name(const std::string& name);
const std::vector<Op>& all_ops();

}  // namespace tessera::graph
