#pragma once
// Sketch generation: every sketch a target's rules derive from a DAG.
#include <vector>

#include "autoschedule/sketch.h"
#include "autoschedule/sketch_rule.h"

namespace tessera::autoschedule {

// At most this many sketches per DAG (each cache-write choice doubles them).
inline constexpr size_t kMaxSketches = 64;

// Visits the stages from the last to the first, trying `rules` at each
// (sketch_rule.h), then gives every stage no rule structured its plain sites:
// its innermost spatial axis split for vectors, its outer spatial loops
// parallel, an unroll pragma when it reduces, and, for a stage with one
// consumer, the consumer's outer loops as places to compute it.
std::vector<Sketch> generate_sketches(const ir::ComputeDAG& dag, const SketchContext& ctx, const SketchRules& rules);
// With cpu_sketch_rules(); throws for a GPU target (no GPU rules yet).
std::vector<Sketch> generate_sketches(const ir::ComputeDAG& dag, const SketchContext& ctx);

}  // namespace tessera::autoschedule
