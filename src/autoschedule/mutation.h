#pragma once
// The evolutionary search's edits of a candidate (Ansor's mutation rules and
// crossover), all on SketchParams, so every result is a valid schedule of
// the same sketch:
//  - tile size: a factor of one level of a tile moves to another level
//    (the outer loop included), the innermost staying at most
//    kMaxInnermostFactor;
//  - auto unroll: another auto_unroll_max_step;
//  - parallel: another number of outer loops fused into the parallel loop;
//  - compute location: another loop (or root) for a movable stage;
//  - pipeline: a pipeline site switched (fetches loaded a step ahead or not).
// Each returns false when the candidate has no site it could change.
#include <random>

#include "autoschedule/sketch.h"

namespace tessera::autoschedule {

enum class MutationKind { TileSize, AutoUnroll, Parallel, ComputeLocation, Pipeline };

bool mutate_tile_size(const Sketch& sketch, SketchParams& params, std::mt19937_64& rng);
bool mutate_auto_unroll(const Sketch& sketch, SketchParams& params, std::mt19937_64& rng);
bool mutate_parallel(const Sketch& sketch, SketchParams& params, std::mt19937_64& rng);
bool mutate_compute_location(const Sketch& sketch, SketchParams& params, std::mt19937_64& rng);
bool mutate_pipeline(const Sketch& sketch, SketchParams& params, std::mt19937_64& rng);
bool mutate(MutationKind kind, const Sketch& sketch, SketchParams& params, std::mt19937_64& rng);

// A child of two candidates of one sketch: every stage takes all of its
// sites (tiles, parallel, vectorize, unroll, location, pipeline) from one parent, drawn
// per stage; vectorize sites are then chosen again for the child's tiles.
SketchParams crossover(const Sketch& sketch, const SketchParams& a, const SketchParams& b, std::mt19937_64& rng);

}  // namespace tessera::autoschedule
