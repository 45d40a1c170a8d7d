#pragma once
// A CPU kernel's arguments in their storage types. Callers hold float arrays
// (inputs, references, comparisons: measure/kernel_args.h); a quantized
// kernel's arguments are stored as Int8, UInt8 or Int32 (ir/expr.h). These
// buffers hold such arguments converted from the arrays' values (integers in
// the type's range, as make_inputs fills them) and convert the outputs back,
// so that every caller keeps its float arrays. Float32 arguments are the
// arrays themselves.
#include <cstdint>
#include <vector>

#include "ir/compute_dag.h"
#include "runtime/ndarray.h"

namespace tessera::measure {

class StorageArguments {
 public:
  // The arrays in ComputeDAG::arguments() order (placeholders, then outputs);
  // they must outlive this object.
  StorageArguments(const ir::ComputeDAG& dag, std::vector<runtime::NDArray>& inputs,
                   std::vector<runtime::NDArray>& outputs);
  // codegen::KernelFn's argument array.
  void** pointers() { return pointers_.data(); }
  // The outputs' stored values into the output arrays (after a call).
  void outputs_to_arrays();

 private:
  std::vector<runtime::NDArray>& outputs_;
  std::vector<ir::DType> output_types_;
  std::vector<std::vector<uint8_t>> stored_;  // per argument; empty where it is Float32
  std::vector<void*> pointers_;
};

// One element of `t`'s storage (an integer type) from a float holding its value.
void store_element(ir::DType t, float value, uint8_t* at);
float load_element(ir::DType t, const uint8_t* at);

}  // namespace tessera::measure
