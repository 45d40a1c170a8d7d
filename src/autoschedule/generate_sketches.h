#pragma once
// Sketch generation: every sketch a target's rules derive from a DAG.
#include <vector>

#include "autoschedule/sketch.h"
#include "autoschedule/sketch_rule.h"

namespace tessera::autoschedule {

// At most this many sketches per DAG (each cache-write choice doubles them).
inline constexpr size_t kMaxSketches = 64;

// Visits the stages from the last to the first, trying `rules` at each
// (sketch_rule.h), then gives every stage no rule structured its plain sites.
// On a CPU: its innermost spatial axis split for vectors, its outer spatial
// loops parallel, an unroll pragma when it reduces, and, for a stage with
// one consumer, the consumer's outer loops as places to compute it. On a
// GPU: the plain GPU stage (sketch_rule.h, add_plain_gpu_stage).
std::vector<Sketch> generate_sketches(const ir::ComputeDAG& dag, const SketchContext& ctx, const SketchRules& rules);
// With the target's rules: gpu_sketch_rules() for cuda and opencl, else
// cpu_sketch_rules().
std::vector<Sketch> generate_sketches(const ir::ComputeDAG& dag, const SketchContext& ctx);

}  // namespace tessera::autoschedule
