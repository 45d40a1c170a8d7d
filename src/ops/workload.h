#pragma once
// A workload: an operator instance as a compute DAG plus its reference.
#include <functional>
#include <string>
#include <vector>

#include "ir/compute_dag.h"

namespace tessera::ops {

// Computes the DAG's single output from its inputs (in dag.placeholders() order),
// with plain loops written independently of the compute declaration.
using Reference = std::function<void(const std::vector<const float*>& inputs, float* output)>;

struct Workload {
  std::string op;        // e.g. "conv2d", "dense"
  ir::ComputeDAG dag;
  Reference reference;
};

}  // namespace tessera::ops
