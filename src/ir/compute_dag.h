#pragma once
// The compute DAG of a task: every tensor from the inputs to the outputs, in
// topological order (producers before consumers).
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace tessera::ir {

class ComputeDAG {
 public:
  ComputeDAG() = default;
  explicit ComputeDAG(std::vector<Tensor> outputs);

  const std::vector<Tensor>& tensors() const { return tensors_; }
  const std::vector<Tensor>& outputs() const { return outputs_; }
  // The task's function arguments: placeholders in topological order, then outputs.
  std::vector<Tensor> arguments() const;
  std::vector<Tensor> placeholders() const;
  // Position of a tensor in tensors(), or -1.
  int index_of(const Tensor& t) const;
  int index_of(const std::string& name) const;
  // Tensors reading t.
  std::vector<Tensor> consumers(const Tensor& t) const;

  // Floating point operations of one run (a multiply-add counts two).
  double flop_count() const;
  // One line per tensor, as in the seeds.
  std::string print() const;
  // A text that identifies the computation (names of variables do not matter),
  // and a hex hash of it: the workload key.
  std::string canonical() const;
  std::string workload_key() const;

 private:
  std::vector<Tensor> outputs_;
  std::vector<Tensor> tensors_;
};

}  // namespace tessera::ir
