#pragma once
// A tensor's values in the type it is stored as (ExecutableGraph::Tensor::
// stored_as: "int8", "uint8", "int32", or "" for float32) and back. Outside
// the kernels every array is float32 (a quantized one holds integers
// exactly); the executor's memory and an artifact's params hold the stored
// type. One place for the conversion both ways.
#include <cstdint>
#include <string>

namespace tessera::runtime {

// Bytes per element of `stored_as` (1, 1, 4, 4).
int64_t stored_element_bytes(const std::string& stored_as);
// n values (integers held as floats, rounded to the nearest) into n elements of `stored_as` at `out`.
void store_values(const std::string& stored_as, const float* values, int64_t n, char* out);
// n elements of `stored_as` at `in` as floats.
void load_values(const std::string& stored_as, const char* in, int64_t n, float* values);

}  // namespace tessera::runtime
