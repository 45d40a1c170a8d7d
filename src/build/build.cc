#include "build/build.h"

#include <algorithm>
#include <map>
#include <set>

#include "build/node_expression.h"
#include "codegen/llvm_codegen.h"
#include "codegen/shared_object.h"
#include "graph/fuse.h"
#include "ir/compute_dag.h"
#include "schedule/manual_schedule.h"
#include "tessera/error.h"
#include "tir/lower.h"

namespace tessera::build {
namespace {

using graph::Node;
using graph::NodeId;

// Assembles the executable graph while kernels are made.
class Builder {
 public:
  Builder(const graph::Graph& g, const codegen::Target& target) : g_(g), target_(target) {}

  BuildResult run() {
    for (NodeId id : g_.input_ids()) {
      result_.artifact.graph.inputs.push_back(new_tensor(g_.node(id).name, g_.node(id).type.shape));
      tensor_of_[id] = result_.artifact.graph.inputs.back();
    }
    for (const graph::FusedGroup& group : graph::fuse_operators(g_)) add_kernel_call(group);
    for (NodeId out : g_.outputs()) result_.artifact.graph.outputs.push_back(value_tensor(out, nullptr, 0));
    result_.artifact.target = target_.str();
    result_.artifact.shared_object = codegen::link_shared_object(objects_);
    result_.artifact.graph.validate();
    return std::move(result_);
  }

 private:
  int new_tensor(const std::string& name, const graph::Shape& shape) {
    result_.artifact.graph.tensors.push_back({name, shape});
    return static_cast<int>(result_.artifact.graph.tensors.size()) - 1;
  }

  // The tensor holding node `id`'s value as `reader` (input `index`) wants it:
  // constants are stored once per form the kernels need.
  int value_tensor(NodeId id, const Node* reader, size_t index) {
    const Node& n = g_.node(id);
    if (n.op != graph::Op::kConstant) return tensor_of_.at(id);
    runtime::NDArray value = reader ? kernel_constant(*reader, index, *n.value) : kernel_constant(n, 0, *n.value);
    const auto key = std::make_pair(id, value.shape());
    auto it = constant_tensor_.find(key);
    if (it != constant_tensor_.end()) return it->second;
    const int t = new_tensor(n.name, value.shape());
    result_.artifact.graph.constants.push_back(t);
    result_.artifact.params.push_back(std::move(value));
    constant_tensor_[key] = t;
    return t;
  }

  // A node whose output has its input's bytes in the same order: a reshape,
  // a flatten, or a layout_transform that moves no element (NCHW <-> NCHW1c;
  // NCHW<b>c <-> NCHW of a 1x1 image).
  bool keeps_bytes(const Node& n) const {
    if (n.op == graph::Op::kReshape || n.op == graph::Op::kFlatten || n.op == graph::Op::kDropout) return true;
    if (n.op != graph::Op::kLayoutTransform) return false;
    const auto& a = n.attrs_as<graph::LayoutTransformAttrs>();
    auto plain_channels = [](const std::string& layout, const graph::Shape& shape) {
      return layout == "NCHW" || layout == "NCHW1c" || (layout.rfind("NCHW", 0) == 0 && shape[2] * shape[3] == 1);
    };
    return plain_channels(a.src, g_.node(n.inputs[0]).type.shape) && plain_channels(a.dst, n.type.shape);
  }

  void add_view(const Node& n) {
    const int source = value_tensor(n.inputs[0], &n, 0);
    tensor_of_[n.id] = new_tensor(n.name, n.type.shape);
    result_.artifact.graph.tensors.back().view_of = source;
  }

  void add_kernel_call(const graph::FusedGroup& group) {
    if (group.nodes.size() == 1 && keeps_bytes(g_.node(group.anchor())) &&
        g_.node(g_.node(group.anchor()).inputs[0]).op != graph::Op::kConstant) {
      add_view(g_.node(group.anchor()));
      return;
    }
    std::set<NodeId> inside(group.nodes.begin(), group.nodes.end());
    std::map<NodeId, ir::Tensor> expr;
    std::map<const ir::TensorNode*, int> tensor_of_placeholder;
    graph::Shape view;  // the anchor's output as its kernel declares it
    const graph::Shape& anchor_shape = g_.node(group.anchor()).type.shape;
    std::string described;
    for (NodeId id : group.nodes) {
      const Node& n = g_.node(id);
      std::vector<ir::Tensor> args;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const NodeId in = n.inputs[i];
        if (inside.count(in)) {
          args.push_back(expr.at(in));
          continue;
        }
        const int t = value_tensor(in, &n, i);
        graph::Shape shape = result_.artifact.graph.tensors[t].shape;
        // Epilogue operands of the anchor's shape take its kernel's view of
        // it (a 1x1 convolution's output positions flattened: same memory).
        if (id != group.anchor() && shape == anchor_shape && !view.empty()) shape = view;
        ir::Tensor p = ir::placeholder(shape, "p" + std::to_string(tensor_of_placeholder.size()));
        tensor_of_placeholder[p.get()] = t;
        args.push_back(p);
      }
      expr[id] = node_expression(g_, n, args);
      if (id == group.anchor()) view = expr[id]->shape;
      described += (described.empty() ? "" : " + ") + n.name;
    }

    ir::ComputeDAG dag({expr.at(group.output())});
    const std::string key = dag.workload_key();
    auto known = kernel_of_key_.find(key);
    std::string name;
    if (known != kernel_of_key_.end()) {
      name = result_.kernels[known->second].name;
      ++result_.kernels[known->second].calls;
    } else {
      name = "tessera_k" + std::to_string(result_.kernels.size()) + "_" + graph::op_name(g_.node(group.anchor()).op);
      const schedule::Trace trace = schedule::best_manual_schedule(dag, target_.vector_unit());
      objects_.push_back(codegen::compile_to_object(tir::lower(dag, trace, name), target_));
      kernel_of_key_[key] = result_.kernels.size();
      result_.kernels.push_back({name, key, described, 1});
    }

    runtime::ExecutableGraph::Call call{name, {}, {}};
    for (const ir::Tensor& p : dag.placeholders()) call.inputs.push_back(tensor_of_placeholder.at(p.get()));
    const Node& out = g_.node(group.output());
    tensor_of_[out.id] = new_tensor(out.name, out.type.shape);
    call.outputs.push_back(tensor_of_[out.id]);
    result_.artifact.graph.calls.push_back(std::move(call));
  }

  const graph::Graph& g_;
  const codegen::Target& target_;
  BuildResult result_;
  std::map<NodeId, int> tensor_of_;
  std::map<std::pair<NodeId, graph::Shape>, int> constant_tensor_;
  std::map<std::string, size_t> kernel_of_key_;
  std::vector<std::string> objects_;
};

}  // namespace

BuildResult build(const graph::Graph& model, const codegen::Target& target) {
  graph::PassOptions options;
  options.block = target.vector_lanes();
  graph::Graph optimized = graph::optimize(model, options);
  BuildResult result = Builder(optimized, target).run();
  result.optimized = std::move(optimized);
  return result;
}

}  // namespace tessera::build
