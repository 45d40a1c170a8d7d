#include "graph/op.h"

#include <utility>

#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::graph {
namespace {

const std::vector<std::pair<Op, std::string>>& op_table() {
  static const std::vector<std::pair<Op, std::string>> table = {
      {Op::kInput, "input"},
      {Op::kConstant, "constant"},
      {Op::kConv2d, "conv2d"},
      {Op::kDense, "dense"},
      {Op::kMatmul, "matmul"},
      {Op::kBatchMatmul, "batch_matmul"},
      {Op::kBatchNorm, "batch_norm"},
      {Op::kBiasAdd, "bias_add"},
      {Op::kAdd, "add"},
      {Op::kMultiply, "multiply"},
      {Op::kRelu, "relu"},
      {Op::kClip, "clip"},
      {Op::kSigmoid, "sigmoid"},
      {Op::kMaxPool2d, "max_pool2d"},
      {Op::kAvgPool2d, "avg_pool2d"},
      {Op::kGlobalAvgPool2d, "global_avg_pool2d"},
      {Op::kConcat, "concat"},
      {Op::kReshape, "reshape"},
      {Op::kFlatten, "flatten"},
      {Op::kTranspose, "transpose"},
      {Op::kPad, "pad"},
      {Op::kSoftmax, "softmax"},
      {Op::kDropout, "dropout"},
      {Op::kLayoutTransform, "layout_transform"},
  };
  return table;
}

}  // namespace

const std::string& op_name(Op op) {
  for (const auto& [o, name] : op_table())
    if (o == op) return name;
  throw Error("op_name: unknown operator kind " + std::to_string(static_cast<int>(op)));
}

Op op_from_name(const std::string& name) {
  std::string known;
  for (const auto& [op, n] : op_table()) {
    if (n == name) return op;
    known += (known.empty() ? "" : ", ") + n;
  }
  throw Error("unknown operator " + support::quoted(name) + " (known: " + known + ")");
}

const std::vector<Op>& all_ops() {
  static const std::vector<Op> ops = [] {
    std::vector<Op> v;
    for (const auto& entry : op_table()) v.push_back(entry.first);
    return v;
  }();
  return ops;
}

}  // namespace tessera::graph
