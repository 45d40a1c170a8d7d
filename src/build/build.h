#pragma once
// Compiling a whole network: graph passes, fusion, one kernel per distinct
// fused group (the hand-written schedule of its operator), all linked into
// one shared object, and the executable graph and weights around it.
#include <string>
#include <vector>

#include "codegen/target.h"
#include "graph/graph.h"
#include "graph/passes.h"
#include "runtime/artifact.h"

namespace tessera::build {

struct KernelSummary {
  std::string name;          // the kernel's symbol
  std::string workload_key;  // its DAG's key: equal keys share one kernel
  std::string nodes;         // the graph nodes it computes, e.g. "layer1.0.conv1 + relu"
  int calls = 0;             // how many times the graph calls it
};

struct BuildResult {
  runtime::Artifact artifact;
  graph::Graph optimized;  // after the passes, what the kernels compute
  std::vector<KernelSummary> kernels;
};

// Throws tessera::Error naming the node when a kernel cannot be made for it.
BuildResult build(const graph::Graph& model, const codegen::Target& target);

}  // namespace tessera::build
