#include "graph/builder.h"

#include "graph/shape_inference.h"
#include "support/fnv1a.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::graph {
namespace {

// FNV-1a: a stable hash of a name, mixed with the builder's seed.
uint64_t name_seed(uint64_t seed, const std::string& name) {
  return support::fnv1a(name, 1469598103934665603ull ^ (seed * 0x9E3779B97F4A7C15ull));
}

}  // namespace

std::string GraphBuilder::unique_name(const std::string& name, Op op) const {
  const std::string base = name.empty() ? op_name(op) : name;
  if (!graph_.find(base)) return base;
  for (int i = 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (!graph_.find(candidate)) return candidate;
  }
}

NodeId GraphBuilder::append(Node node) {
  node.name = unique_name(node.name, node.op);
  node.id = static_cast<NodeId>(graph_.size());
  // Inferred before adding, so a failed node leaves the graph as it was.
  node.type = infer_type(graph_, node);
  return graph_.add(std::move(node));
}

NodeId GraphBuilder::add_node(Op op, const std::string& name, std::vector<NodeId> inputs, Attrs attrs) {
  // A bad id fails before inference reads it; ids from before finish() name
  // nodes of the finished graph, not of this one.
  for (NodeId in : inputs)
    if (in < 0 || in >= static_cast<NodeId>(graph_.size()))
      throw Error("GraphBuilder: " + op_name(op) + " " + support::quoted(name) + " reads node id " +
                  std::to_string(in) + ", which this builder does not have (" + std::to_string(graph_.size()) +
                  " nodes" + (finished_ ? "; ids from before finish() belong to the finished graph)" : ")"));
  Node node;
  node.name = name;
  node.op = op;
  node.inputs = std::move(inputs);
  node.attrs = std::move(attrs);
  return append(std::move(node));
}

NodeId GraphBuilder::input(const std::string& name, Shape shape, DataType dtype) {
  Node node;
  node.name = name;
  node.op = Op::kInput;
  node.type.shape = std::move(shape);
  node.type.dtype = dtype;
  return append(std::move(node));
}

NodeId GraphBuilder::constant(const std::string& name, runtime::NDArray value, DataType dtype) {
  return constant(name, std::make_shared<const runtime::NDArray>(std::move(value)), dtype);
}

NodeId GraphBuilder::constant(const std::string& name, std::shared_ptr<const runtime::NDArray> value, DataType dtype) {
  Node node;
  node.name = name;
  node.op = Op::kConstant;
  node.value = std::move(value);
  node.type.dtype = dtype;
  return append(std::move(node));
}

runtime::NDArray GraphBuilder::random_array(const std::string& name, Shape shape, float lo, float hi) const {
  runtime::NDArray value(std::move(shape));
  value.fill_random(name_seed(seed_, name), lo, hi);
  return value;
}

NodeId GraphBuilder::random_constant(const std::string& name, Shape shape, float lo, float hi) {
  return constant(name, random_array(name, std::move(shape), lo, hi));
}

NodeId GraphBuilder::conv2d(NodeId data, NodeId weight, const Conv2dAttrs& attrs, const std::string& name) {
  return add_node(Op::kConv2d, name, {data, weight}, attrs);
}
NodeId GraphBuilder::dense(NodeId data, NodeId weight, const std::string& name) {
  return add_node(Op::kDense, name, {data, weight});
}
NodeId GraphBuilder::matmul(NodeId a, NodeId b, const std::string& name) { return add_node(Op::kMatmul, name, {a, b}); }
NodeId GraphBuilder::batch_matmul(NodeId a, NodeId b, const std::string& name) {
  return add_node(Op::kBatchMatmul, name, {a, b});
}
NodeId GraphBuilder::batch_norm(NodeId data, NodeId gamma, NodeId beta, NodeId mean, NodeId var,
                                const BatchNormAttrs& attrs, const std::string& name) {
  return add_node(Op::kBatchNorm, name, {data, gamma, beta, mean, var}, attrs);
}
NodeId GraphBuilder::bias_add(NodeId data, NodeId bias, int64_t axis, const std::string& name) {
  return add_node(Op::kBiasAdd, name, {data, bias}, BiasAddAttrs{axis});
}
NodeId GraphBuilder::add(NodeId a, NodeId b, const std::string& name) { return add_node(Op::kAdd, name, {a, b}); }
NodeId GraphBuilder::multiply(NodeId a, NodeId b, const std::string& name) {
  return add_node(Op::kMultiply, name, {a, b});
}
NodeId GraphBuilder::relu(NodeId x, const std::string& name) { return add_node(Op::kRelu, name, {x}); }
NodeId GraphBuilder::clip(NodeId x, float min, float max, const std::string& name) {
  return add_node(Op::kClip, name, {x}, ClipAttrs{min, max});
}
NodeId GraphBuilder::sigmoid(NodeId x, const std::string& name) { return add_node(Op::kSigmoid, name, {x}); }
NodeId GraphBuilder::max_pool2d(NodeId x, const Pool2dAttrs& attrs, const std::string& name) {
  return add_node(Op::kMaxPool2d, name, {x}, attrs);
}
NodeId GraphBuilder::avg_pool2d(NodeId x, const Pool2dAttrs& attrs, const std::string& name) {
  return add_node(Op::kAvgPool2d, name, {x}, attrs);
}
NodeId GraphBuilder::global_avg_pool2d(NodeId x, const std::string& layout, const std::string& name) {
  return add_node(Op::kGlobalAvgPool2d, name, {x}, GlobalPoolAttrs{layout});
}
NodeId GraphBuilder::concat(const std::vector<NodeId>& xs, int64_t axis, const std::string& name) {
  return add_node(Op::kConcat, name, xs, ConcatAttrs{axis});
}
NodeId GraphBuilder::reshape(NodeId x, Shape newshape, const std::string& name) {
  return add_node(Op::kReshape, name, {x}, ReshapeAttrs{std::move(newshape)});
}
NodeId GraphBuilder::flatten(NodeId x, int64_t axis, const std::string& name) {
  return add_node(Op::kFlatten, name, {x}, FlattenAttrs{axis});
}
NodeId GraphBuilder::transpose(NodeId x, std::vector<int64_t> perm, const std::string& name) {
  return add_node(Op::kTranspose, name, {x}, TransposeAttrs{std::move(perm)});
}
NodeId GraphBuilder::pad(NodeId x, const PadAttrs& attrs, const std::string& name) {
  return add_node(Op::kPad, name, {x}, attrs);
}
NodeId GraphBuilder::softmax(NodeId x, int64_t axis, const std::string& name) {
  return add_node(Op::kSoftmax, name, {x}, SoftmaxAttrs{axis});
}
NodeId GraphBuilder::dropout(NodeId x, double rate, const std::string& name) {
  return add_node(Op::kDropout, name, {x}, DropoutAttrs{rate});
}
NodeId GraphBuilder::layout_transform(NodeId x, const std::string& src, const std::string& dst,
                                      const std::string& name) {
  return add_node(Op::kLayoutTransform, name, {x}, LayoutTransformAttrs{src, dst});
}

Graph GraphBuilder::finish(std::vector<NodeId> outputs) {
  if (outputs.empty()) throw Error("graph: finished without outputs");
  graph_.set_outputs(std::move(outputs));
  Graph done = std::move(graph_);
  graph_ = Graph();
  finished_ = true;
  return done;
}

}  // namespace tessera::graph
