#pragma once
// The network IR: a Graph is a list of Nodes in topological order (a node's
// inputs have smaller ids), each with a name from the model ("layer1.0.conv1"),
// an operator kind, typed attributes, the ids of its inputs and the type of
// its one output. Constants (weights) carry their value, shared between
// graphs so passes can copy a graph without copying its weights.
//
// A Graph is a plain value: passes are functions from Graph to Graph.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/attrs.h"
#include "graph/op.h"
#include "ir/expr.h"
#include "runtime/ndarray.h"

namespace tessera::graph {

using NodeId = int64_t;

// What a tensor holds. Values compute in float32; kInt64 marks a graph input
// the caller gives as integers (token ids, positions), which the runtime
// holds as exact float32 values (integers up to 2^24). kInt8, kUInt8 and
// kInt32 are quantized storage (ops/quantize.h): the interpreter holds their
// integers as floats too, compiled kernels store them in their type
// (ir/expr.h); operators say what they make of them (Operator::infer_dtype).
enum class DataType { kFloat32, kInt64, kInt8, kUInt8, kInt32 };
std::string dtype_name(DataType dtype);
// The storage a kernel's placeholder gets for a tensor of this type (kInt64
// inputs are held as float32), and back.
ir::DType storage_type(DataType dtype);
DataType data_type(ir::DType storage);

struct TensorType {
  Shape shape;
  DataType dtype = DataType::kFloat32;

  // "float32[1, 64, 56, 56]"
  std::string to_string() const;
  bool operator==(const TensorType&) const = default;
};

struct Node {
  NodeId id = -1;
  std::string name;
  Op op = Op::kInput;
  Attrs attrs;
  std::vector<NodeId> inputs;
  TensorType type;
  std::shared_ptr<const runtime::NDArray> value;  // constants only

  // The attributes as their struct; throws tessera::Error naming the node when
  // they are of another kind (a malformed graph, not a user's typo).
  template <typename T>
  const T& attrs_as() const {
    if (const T* a = attrs.get_if<T>()) return *a;
    throw_wrong_attrs();
  }
  // "node 'layer1.0.conv1' (conv2d)": the prefix of every error about this node.
  std::string describe() const;

 private:
  [[noreturn]] void throw_wrong_attrs() const;
};

class Graph {
 public:
  // Appends a node; its id is set to its position. Throws when an input id is
  // not an earlier node (which keeps the order topological), when the name is
  // empty or taken, or when a constant has no value. Types are not inferred
  // here (see infer_shapes / GraphBuilder).
  NodeId add(Node node);

  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(NodeId id) const;
  Node& mutable_node(NodeId id);
  size_t size() const { return nodes_.size(); }

  // The graph inputs in the order they were added: the order interpret() and
  // executors take their arguments in.
  std::vector<NodeId> input_ids() const;
  const std::vector<NodeId>& outputs() const { return outputs_; }
  void set_outputs(std::vector<NodeId> outputs);

  // Gives node `id` a name no other node has (throws otherwise).
  void rename(NodeId id, const std::string& name);

  // The node called `name`, if any.
  std::optional<NodeId> find(const std::string& name) const;

 private:
  std::vector<Node> nodes_;
  std::vector<NodeId> outputs_;
  std::unordered_map<std::string, NodeId> by_name_;
};

// Whether a conv2d node is depthwise: groups equal to its input channels (each
// output channel reads one input channel).
bool is_depthwise(const Graph& graph, const Node& node);

// A node as a call of its operator (ops/operator.h): its attributes, its
// inputs' and its own shape, which inputs are constants. Refers to the node's
// attributes: the graph must outlive it.
ops::OperatorCall operator_call(const Graph& graph, const Node& node);

// Trainable parameters as torchvision counts them: every constant element,
// except batch norm's running mean and variance (buffers in PyTorch, not
// parameters), so the zoo's counts compare with torchvision's published ones.
int64_t count_parameters(const Graph& graph);

}  // namespace tessera::graph
