#include "ir/half_storage.h"

#include <algorithm>
#include <unordered_map>

#include "ir/functor.h"

namespace tessera::ir {

namespace {

// Loads of the old tensors read the new ones instead.
struct Redirect : ExprMutator {
  const std::unordered_map<const TensorNode*, Tensor>* to = nullptr;
  Expr mutate_load(const TensorLoadNode* n, const Expr& e) override {
    Expr m = mutate_children(e);
    const auto* l = m.as<TensorLoadNode>();
    auto it = to->find(l->tensor.get());
    return it == to->end() ? m : load(it->second, l->indices);
  }
};

}  // namespace

ComputeDAG with_half_storage(const ComputeDAG& dag) {
  std::unordered_map<const TensorNode*, Tensor> replaced;
  Redirect redirect;
  redirect.to = &replaced;
  const auto& outputs = dag.outputs();
  for (const Tensor& t : dag.tensors()) {
    auto copy = std::make_shared<TensorNode>(*t);
    if (!t->is_placeholder()) copy->body = redirect.mutate(t->body);
    const bool argument = t->is_placeholder() || std::find(outputs.begin(), outputs.end(), t) != outputs.end();
    if (argument && t->dtype == DType::Float32) copy->dtype = DType::Float16;  // indices stay integers
    replaced[t.get()] = copy;
  }
  std::vector<Tensor> new_outputs;
  for (const Tensor& o : outputs) new_outputs.push_back(replaced.at(o.get()));
  return ComputeDAG(std::move(new_outputs));
}

}  // namespace tessera::ir
