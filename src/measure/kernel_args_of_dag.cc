// The parts of kernel_args.h that need a ComputeDAG, apart from the rest so
// that the runtime-only RPC server (which has shapes, not DAGs) links
// kernel_args.cc without the IR.
#include "measure/kernel_args.h"

#include <cmath>

namespace tessera::measure {

std::vector<std::vector<int64_t>> tensor_shapes(const std::vector<ir::Tensor>& tensors) {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& t : tensors) shapes.push_back(t->shape);
  return shapes;
}

std::vector<runtime::NDArray> make_inputs(const ir::ComputeDAG& dag) {
  const std::vector<ir::Tensor> placeholders = dag.placeholders();
  std::vector<runtime::NDArray> arrays = make_inputs(tensor_shapes(placeholders));
  // Integer storage (quantized kernels): whole numbers across the type's
  // range; an Int32 operand (a bias) within +-2^15, as quantized biases are.
  for (size_t i = 0; i < arrays.size(); ++i) {
    const ir::DType t = placeholders[i]->dtype;
    if (t != ir::DType::Int8 && t != ir::DType::UInt8 && t != ir::DType::Int32) continue;
    const float lo = t == ir::DType::Int8 ? -128.0f : t == ir::DType::UInt8 ? 0.0f : -32768.0f;
    const float hi = t == ir::DType::Int8 ? 128.0f : t == ir::DType::UInt8 ? 256.0f : 32768.0f;
    arrays[i].fill_random(input_seed(i), lo, hi);
    for (int64_t e = 0; e < arrays[i].size(); ++e) arrays[i].data()[e] = std::floor(arrays[i].data()[e]);
  }
  return arrays;
}

std::vector<runtime::NDArray> make_outputs(const ir::ComputeDAG& dag) {
  std::vector<runtime::NDArray> arrays;
  arrays.reserve(dag.outputs().size());
  for (const auto& t : dag.outputs()) arrays.emplace_back(t->shape);
  return arrays;
}

}  // namespace tessera::measure
