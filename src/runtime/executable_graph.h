#pragma once
// What a compiled model runs: its tensors, and the kernel calls that compute
// them in order. Compile (src/compile) writes one; GraphExecutor runs it. It knows
// nothing of operators or schedules: a call is a kernel name and the tensors
// it reads and writes (the kernel ABI of codegen: `int32_t NAME(void** args)`,
// inputs first, outputs last).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::runtime {

struct ExecutableGraph {
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;  // fp32, row-major
    // A view: this tensor is the bytes of an earlier tensor (same element
    // count), as a reshape or flatten leaves them. Nothing writes a view.
    int view_of = -1;
    // An input the caller gives as integers (token ids): the runtime holds
    // them as float32, exact up to 2^24.
    bool integer = false;
    // Stored in IEEE half precision on the device (a network compiled with
    // --dtype float16 for a GPU: its weights and intermediate values; inputs
    // and outputs stay float32). A view has its root's storage.
    bool half = false;
    // Quantized storage: "int8", "uint8" or "int32" (a quantized network's
    // activations, weights and biases); empty: float32 (or half). Inputs and
    // outputs are float32; a constant's values convert when it loads.
    std::string stored_as;
  };
  struct Call {
    std::string kernel;
    std::vector<int> inputs;   // tensor ids
    std::vector<int> outputs;  // tensor ids, each written by this call only
  };

  std::vector<Tensor> tensors;
  std::vector<int> inputs;     // set by the user before a run
  std::vector<int> constants;  // weights, stored with the graph
  std::vector<int> outputs;    // what get_output returns, in order
  std::vector<Call> calls;     // in execution order

  int64_t num_elements(int tensor) const;
  // Bytes of one element as stored: 2 for a half tensor, 1 for int8 and
  // uint8, else 4.
  int64_t element_bytes(int tensor) const;
  bool has_half_tensors() const;
  // The tensor whose bytes `tensor` is (itself unless a view).
  int storage_root(int tensor) const;

  // Throws tessera::Error naming the first problem: an id out of range, a
  // tensor read before any call writes it, one written twice or both an
  // input and written, a shape that is empty of elements or overflows, a
  // view of a later tensor or of another size, or one that is written.
  void validate() const;

  nlohmann::json to_json() const;
  // Parses and validates; errors name `source` (e.g. the artifact's path).
  static ExecutableGraph from_json(const nlohmann::json& j, const std::string& source);
};

}  // namespace tessera::runtime
