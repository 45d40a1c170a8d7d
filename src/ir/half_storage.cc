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

// The same DAG, each tensor's dtype as `dtype_of` gives it, the bodies
// reading the new tensors.
template <class DtypeOf>
ComputeDAG with_dtypes(const ComputeDAG& dag, const DtypeOf& dtype_of) {
  std::unordered_map<const TensorNode*, Tensor> replaced;
  Redirect redirect;
  redirect.to = &replaced;
  for (const Tensor& t : dag.tensors()) {
    auto copy = std::make_shared<TensorNode>(*t);
    if (!t->is_placeholder()) copy->body = redirect.mutate(t->body);
    copy->dtype = dtype_of(t);
    replaced[t.get()] = copy;
  }
  std::vector<Tensor> new_outputs;
  for (const Tensor& o : dag.outputs()) new_outputs.push_back(replaced.at(o.get()));
  return ComputeDAG(std::move(new_outputs));
}

}  // namespace

ComputeDAG with_half_storage(const ComputeDAG& dag, const std::vector<bool>& keep_float32, bool outputs_float32) {
  const auto& outputs = dag.outputs();
  const auto placeholders = dag.placeholders();
  auto kept = [&](const Tensor& t) {
    for (size_t i = 0; i < placeholders.size() && i < keep_float32.size(); ++i)
      if (placeholders[i] == t) return static_cast<bool>(keep_float32[i]);
    return false;
  };
  return with_dtypes(dag, [&](const Tensor& t) {
    const bool output = std::find(outputs.begin(), outputs.end(), t) != outputs.end();
    const bool half = t->is_placeholder() ? !kept(t) : output && !outputs_float32;
    return half && t->dtype == DType::Float32 ? DType::Float16 : t->dtype;  // integer tensors stay integers
  });
}

ComputeDAG with_float32_storage(const ComputeDAG& dag) {
  return with_dtypes(dag, [](const Tensor& t) { return t->dtype == DType::Float16 ? DType::Float32 : t->dtype; });
}

}  // namespace tessera::ir
