#include "measure/host_reference.h"

#include <memory>

#include "codegen/llvm_codegen.h"
#include "codegen/module.h"
#include "ir/half_storage.h"
#include "schedule/default_schedule.h"
#include "tir/lower.h"

namespace tessera::measure {

ReferenceFn host_reference(const ir::ComputeDAG& dag) {
  const ir::ComputeDAG fp32 = ir::with_float32_storage(dag);
  const tir::LoweredFunc f = tir::lower(fp32, schedule::default_schedule(fp32), "reference");
  auto module = std::make_shared<codegen::Module>(
      codegen::Module::load_object(codegen::compile_to_object(f, target::Target::host())));
  const codegen::KernelFn kernel = module->function("reference");
  std::vector<int64_t> output_sizes;
  for (const auto& o : fp32.outputs()) output_sizes.push_back(o->num_elements());
  return [module, kernel, output_sizes](const std::vector<const float*>& inputs, float* output) {
    std::vector<std::vector<float>> outputs;
    std::vector<void*> args;
    for (const float* in : inputs) args.push_back(const_cast<float*>(in));  // the kernel only reads its inputs
    for (size_t i = 0; i < output_sizes.size(); ++i) {
      outputs.emplace_back(i == 0 ? 0 : output_sizes[i]);
      args.push_back(i == 0 ? output : outputs.back().data());
    }
    kernel(args.data());
  };
}

}  // namespace tessera::measure
