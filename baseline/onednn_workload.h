#pragma once
// The oneDNN layer that computes what ops::make_workload(op, args) computes, so
// that the CLI and the benchmarks compare like with like. The oneDNN layer is
// always built from the plain NCHW / OIHW shapes in args (oneDNN picks its own
// blocked layout), whatever args.layout says.
#include <string>

#include "target/target.h"
#include "onednn.h"
#include "ops/registry.h"

namespace tessera::baseline {

// True for the ops oneDNN has a counterpart for here: conv2d, dense, softmax (2-D).
bool has_onednn_counterpart(const std::string& op);

// Holds oneDNN to the vector ISA of our target (set_max_isa), so that a
// comparison is of like with like, e.g. both sides AVX2 on an AVX-512 machine;
// leaves it alone when the target has the host's ISA. Call before creating a layer.
void match_target_isa(const target::Target& target);

// With random inputs (fixed seeds). Throws tessera::Error for another op.
// Call set_threads first: the layer is tuned for the thread count at creation.
OneDnnLayer make_onednn_layer(const std::string& op, const ops::OpArgs& args);

}  // namespace tessera::baseline
