#pragma once
// The operator kind of a graph node: a name in the operator registry
// (ops/operator.h), which defines everything about it. The constants below
// are the kinds the graph's passes, the zoo and the importers name in code;
// an operator no pass rewrites needs none (Op::named("hard_swish")).
#include <string>
#include <string_view>

#include "ops/operator.h"

namespace tessera::graph {

class Op {
 public:
  // The registered operator called `name`; throws tessera::Error listing the
  // known names.
  static Op named(const std::string& name);

  const std::string& name() const { return definition().name; }
  // Its definition in the registry.
  const ops::Operator& definition() const;

  bool operator==(const Op& other) const { return name_ == other.name_; }
  auto operator<=>(const Op& other) const { return name_ <=> other.name_; }

  static const Op kInput, kConstant, kConv2d, kDense, kMatmul, kBatchMatmul, kBatchNorm, kBiasAdd, kAdd, kMultiply,
      kRelu, kClip, kSigmoid, kMaxPool2d, kAvgPool2d, kGlobalAvgPool2d, kConcat, kReshape, kFlatten, kTranspose,
      kPad, kSoftmax, kDropout, kLayoutTransform;

 private:
  // A literal or a registry entry's name: both outlive every Op.
  constexpr explicit Op(std::string_view name) : name_(name) {}
  std::string_view name_;
};

// Constant-initialised (no static-initialisation order to get wrong); their
// names are checked against the registry by the graph's tests.
inline constexpr Op Op::kInput{"input"}, Op::kConstant{"constant"}, Op::kConv2d{"conv2d"}, Op::kDense{"dense"},
    Op::kMatmul{"matmul"}, Op::kBatchMatmul{"batch_matmul"}, Op::kBatchNorm{"batch_norm"}, Op::kBiasAdd{"bias_add"},
    Op::kAdd{"add"}, Op::kMultiply{"multiply"}, Op::kRelu{"relu"}, Op::kClip{"clip"}, Op::kSigmoid{"sigmoid"},
    Op::kMaxPool2d{"max_pool2d"}, Op::kAvgPool2d{"avg_pool2d"}, Op::kGlobalAvgPool2d{"global_avg_pool2d"},
    Op::kConcat{"concat"}, Op::kReshape{"reshape"}, Op::kFlatten{"flatten"}, Op::kTranspose{"transpose"},
    Op::kPad{"pad"}, Op::kSoftmax{"softmax"}, Op::kDropout{"dropout"}, Op::kLayoutTransform{"layout_transform"};

// "conv2d", "global_avg_pool2d", ...
inline const std::string& op_name(Op op) { return op.name(); }
// The inverse of op_name; throws tessera::Error listing the known names.
inline Op op_from_name(const std::string& name) { return Op::named(name); }
// Every registered operator kind, sorted by name.
std::vector<Op> all_ops();

}  // namespace tessera::graph
