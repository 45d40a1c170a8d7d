#pragma once
// GraphBuilder: writes a graph as straight-line code, inferring each node's
// type as it is added, so an impossible shape fails at the line that made it:
//
//   GraphBuilder b;
//   NodeId x = b.input("data", {1, 3, 224, 224});
//   NodeId w = b.random_constant("conv1.weight", {64, 3, 7, 7}, -0.1f, 0.1f);
//   x = b.conv2d(x, w, Conv2dAttrs::symmetric(2, 3), "conv1");
//   x = b.relu(x, "relu");
//   Graph g = b.finish({x});
//
// Names must be unique in a graph; a name already taken gets "_1", "_2", ...
// (torchvision reuses one "relu" module per block); an empty name becomes the
// operator's name.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tessera::graph {

class GraphBuilder {
 public:
  // `seed` makes random_constant's values reproducible.
  explicit GraphBuilder(uint64_t seed = 0) : seed_(seed) {}

  NodeId input(const std::string& name, Shape shape, DataType dtype = DataType::kFloat32);
  // dtype: what the values are stored as in a kernel (quantized weights:
  // kInt8; biases: kInt32); the array holds them as floats either way.
  NodeId constant(const std::string& name, runtime::NDArray value, DataType dtype = DataType::kFloat32);
  NodeId constant(const std::string& name, std::shared_ptr<const runtime::NDArray> value,
                  DataType dtype = DataType::kFloat32);
  // Uniform values in [lo, hi) drawn from the builder's seed and `name`, so a
  // weight does not change when nodes are added before it.
  NodeId random_constant(const std::string& name, Shape shape, float lo, float hi);
  // The values random_constant(name, ...) would hold, for callers that
  // rearrange them first (the zoo's HWIO weights are its OIHW ones transposed).
  runtime::NDArray random_array(const std::string& name, Shape shape, float lo, float hi) const;

  NodeId conv2d(NodeId data, NodeId weight, const Conv2dAttrs& attrs, const std::string& name = "");
  NodeId dense(NodeId data, NodeId weight, const std::string& name = "");
  NodeId matmul(NodeId a, NodeId b, const std::string& name = "");
  NodeId batch_matmul(NodeId a, NodeId b, const std::string& name = "");
  NodeId batch_norm(NodeId data, NodeId gamma, NodeId beta, NodeId mean, NodeId var, const BatchNormAttrs& attrs,
                    const std::string& name = "");
  NodeId bias_add(NodeId data, NodeId bias, int64_t axis = 1, const std::string& name = "");
  NodeId add(NodeId a, NodeId b, const std::string& name = "");
  NodeId multiply(NodeId a, NodeId b, const std::string& name = "");
  NodeId relu(NodeId x, const std::string& name = "");
  NodeId clip(NodeId x, float min, float max, const std::string& name = "");
  NodeId sigmoid(NodeId x, const std::string& name = "");
  NodeId max_pool2d(NodeId x, const Pool2dAttrs& attrs, const std::string& name = "");
  NodeId avg_pool2d(NodeId x, const Pool2dAttrs& attrs, const std::string& name = "");
  NodeId global_avg_pool2d(NodeId x, const std::string& layout = "NCHW", const std::string& name = "");
  NodeId concat(const std::vector<NodeId>& xs, int64_t axis, const std::string& name = "");
  NodeId reshape(NodeId x, Shape newshape, const std::string& name = "");
  NodeId flatten(NodeId x, int64_t axis = 1, const std::string& name = "");
  NodeId transpose(NodeId x, std::vector<int64_t> perm, const std::string& name = "");
  NodeId pad(NodeId x, const PadAttrs& attrs, const std::string& name = "");
  NodeId softmax(NodeId x, int64_t axis = -1, const std::string& name = "");
  NodeId dropout(NodeId x, double rate, const std::string& name = "");
  NodeId layout_transform(NodeId x, const std::string& src, const std::string& dst, const std::string& name = "");

  // Any node: its type is inferred now (throws naming the node).
  NodeId add_node(Op op, const std::string& name, std::vector<NodeId> inputs, Attrs attrs = NoAttrs{});

  const Shape& shape(NodeId id) const { return graph_.node(id).type.shape; }
  const Graph& graph() const { return graph_; }
  // The finished graph with these outputs; the builder is left empty.
  Graph finish(std::vector<NodeId> outputs);

 private:
  std::string unique_name(const std::string& name, Op op) const;
  NodeId append(Node node);

  uint64_t seed_;
  Graph graph_;
  bool finished_ = false;  // finish() has been called: old ids name nodes of that graph
};

}  // namespace tessera::graph
