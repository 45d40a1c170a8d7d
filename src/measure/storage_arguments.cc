#include "measure/storage_arguments.h"

#include <cmath>
#include <cstring>

#include "tessera/error.h"

namespace tessera::measure {

void store_element(ir::DType t, float value, uint8_t* at) {
  const auto v = static_cast<int64_t>(std::nearbyint(value));
  switch (t) {
    case ir::DType::Int8: *reinterpret_cast<int8_t*>(at) = static_cast<int8_t>(v); return;
    case ir::DType::UInt8: *at = static_cast<uint8_t>(v); return;
    case ir::DType::Int32: {
      const auto i = static_cast<int32_t>(v);
      std::memcpy(at, &i, sizeof i);
      return;
    }
    default: throw Error("a CPU kernel argument stored as " + ir::to_string(t) + " (float32, int8, uint8, int32 are)");
  }
}

float load_element(ir::DType t, const uint8_t* at) {
  switch (t) {
    case ir::DType::Int8: return static_cast<float>(*reinterpret_cast<const int8_t*>(at));
    case ir::DType::UInt8: return static_cast<float>(*at);
    case ir::DType::Int32: {
      int32_t i;
      std::memcpy(&i, at, sizeof i);
      return static_cast<float>(i);
    }
    default: throw Error("a CPU kernel argument stored as " + ir::to_string(t) + " (float32, int8, uint8, int32 are)");
  }
}

StorageArguments::StorageArguments(const ir::ComputeDAG& dag, std::vector<runtime::NDArray>& inputs,
                                   std::vector<runtime::NDArray>& outputs)
    : outputs_(outputs) {
  const std::vector<ir::Tensor> args = dag.arguments();
  if (args.size() != inputs.size() + outputs.size())
    throw Error("kernel arguments: " + std::to_string(inputs.size() + outputs.size()) + " arrays for " +
                std::to_string(args.size()) + " arguments");
  for (size_t i = 0; i < args.size(); ++i) {
    runtime::NDArray& array = i < inputs.size() ? inputs[i] : outputs[i - inputs.size()];
    const ir::DType t = args[i]->dtype;
    if (i >= inputs.size()) output_types_.push_back(t);
    if (t == ir::DType::Float32) {
      stored_.emplace_back();
      pointers_.push_back(array.data());
      continue;
    }
    const int64_t bytes = ir::size_in_bytes(t);
    std::vector<uint8_t>& s = stored_.emplace_back(static_cast<size_t>(array.size() * bytes));
    if (i < inputs.size())
      for (int64_t e = 0; e < array.size(); ++e) store_element(t, array.data()[e], s.data() + e * bytes);
    pointers_.push_back(s.data());
  }
}

void StorageArguments::outputs_to_arrays() {
  const size_t first_output = stored_.size() - outputs_.size();
  for (size_t o = 0; o < outputs_.size(); ++o) {
    const std::vector<uint8_t>& s = stored_[first_output + o];
    if (s.empty()) continue;
    const int64_t bytes = ir::size_in_bytes(output_types_[o]);
    for (int64_t e = 0; e < outputs_[o].size(); ++e)
      outputs_[o].data()[e] = load_element(output_types_[o], s.data() + e * bytes);
  }
}

}  // namespace tessera::measure
