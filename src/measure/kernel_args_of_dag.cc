// The parts of kernel_args.h that need a ComputeDAG, apart from the rest so
// that the runtime-only RPC server (which has shapes, not DAGs) links
// kernel_args.cc without the IR.
#include "measure/kernel_args.h"

namespace tessera::measure {

std::vector<std::vector<int64_t>> tensor_shapes(const std::vector<ir::Tensor>& tensors) {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& t : tensors) shapes.push_back(t->shape);
  return shapes;
}

std::vector<runtime::NDArray> make_inputs(const ir::ComputeDAG& dag) { return make_inputs(tensor_shapes(dag.placeholders())); }

std::vector<runtime::NDArray> make_outputs(const ir::ComputeDAG& dag) {
  std::vector<runtime::NDArray> arrays;
  arrays.reserve(dag.outputs().size());
  for (const auto& t : dag.outputs()) arrays.emplace_back(t->shape);
  return arrays;
}

}  // namespace tessera::measure
