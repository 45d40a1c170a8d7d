#pragma once
// A sketch (Ansor): the structure of a schedule with its numbers left open.
// The sketch rules (sketch_rule.h) decide, stage by stage, what is inlined,
// tiled, cached and fused; they leave the lengths of the tiling splits and
// the annotations (parallel, vectorize, unroll, compute location) as open
// sites. SketchParams fill every site, and instantiate() turns a sketch and
// its params into a concrete schedule::Trace, the thing measured and logged.
// Search (mutation, crossover) works on params, so every candidate is a
// valid schedule by construction.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "schedule/trace.h"

namespace tessera::autoschedule {

// One axis split by multi-level tiling: `lengths` inner lengths to choose,
// whose product divides `extent` (the outer loop runs the rest).
struct TileSlot {
  std::string stage, iter;
  int64_t extent = 1;
  int lengths = 1;
  bool reduce = false;
};

// A split whose lengths are a tile slot's.
struct TiledSplit {
  std::string stage, iter;
  int slot = 0;
};
// A split whose lengths are products of consecutive groups of a slot's
// lengths after its first `skip`: a fused consumer's tiles follow its
// producer's (groups {1, 2} of lengths (a, b, c) split by (a, b * c)), and
// the producer, computed inside one of them, splits what is left of it
// (skip 1, groups {1, 1}: (b, c)).
struct FollowSplit {
  std::string stage, iter;
  int slot = 0;
  std::vector<int> groups;
  int skip = 0;
};
// An rfactor whose factor is the product of a tile slot's lengths.
struct TiledRfactor {
  std::string stage, axis;
  int slot = 0;
};
// A GPU block's threads: the product of these tile lengths (slot, index
// into its lengths), one per spatial axis bound to threadIdx.x, times
// threads_per_unit (32 where each unit is a warp: tensor-core blocks, whose
// warps are threadIdx.y and lanes threadIdx.x).
struct BlockThreads {
  std::vector<std::pair<int, int>> lengths;
  int64_t threads_per_unit = 1;
};
// A cooperative fetch's split (GPU): the copy's fused loop split by the
// units of block `block` (Sketch::blocks: its threads, or its warps, and
// then a warp's lanes), bound by the rule to threadIdx.x (or y, and x the
// lanes), so that every thread of the block copies its share; when
// vectorize site `vector_site` is on, each thread copies `lanes`
// consecutive elements (one 16-byte load where the code generator proves
// it aligned: 4 floats, 8 halves).
inline constexpr int64_t kFetchLanes = 4;  // fp32 elements in 16 bytes
struct FetchSplit {
  std::string stage, iter;
  int block = 0;
  int vector_site = -1;
  int64_t lanes = kFetchLanes;
};
using SketchStep = std::variant<schedule::Step, TiledSplit, FollowSplit, TiledRfactor, FetchSplit>;

// Outer loops (outermost first, adjacent) of a root stage: the first k are
// fused into one parallel loop.
struct ParallelSite {
  std::string stage;
  std::vector<std::string> iters;
};
struct VectorizeSite {
  std::string stage, iter;
  // A cooperative fetch's lanes (FetchSplit): drawn at random and passed on
  // by crossover, not chosen from the loop's extent.
  bool fetch = false;
};
// An auto-unroll pragma on the stage's outermost loop.
struct UnrollSite {
  std::string stage, iter;
};
// A loop whose body fetches into shared memory and computes (a GPU tile's
// reduction step): choice 1 loads the next step's fetches while this one
// computes (schedule::Annotation::Pipeline, tir/pipeline_fetches.h).
struct PipelineSite {
  std::string stage, iter;
};
// A stage computed at root (choice 0) or inside loop target_iters[k - 1] of
// `target_stage` (choice k).
struct ComputeLocationSite {
  std::string stage, target_stage;
  std::vector<std::string> target_iters;
};

// The auto_unroll_max_step values an unroll site chooses from.
const std::vector<int>& auto_unroll_choices();

struct Sketch {
  ir::ComputeDAG dag;              // what it schedules
  std::vector<std::string> rules;  // what made it, stage by stage, e.g. "conv: multi-level tiling"
  std::vector<SketchStep> steps;
  std::vector<TileSlot> tiles;
  std::vector<ParallelSite> parallel;
  std::vector<VectorizeSite> vectorize;
  std::vector<UnrollSite> unroll;
  std::vector<ComputeLocationSite> locations;
  std::vector<PipelineSite> pipeline;
  std::vector<BlockThreads> blocks;  // GPU: the blocks whose thread counts are tile lengths

  // The rules, then the steps with "?" for open lengths, then the sites.
  std::string print() const;
};

// The numbers of one candidate: one entry per site of its sketch.
struct SketchParams {
  std::vector<std::vector<int64_t>> tiles;  // per tile slot: its inner lengths, outermost first
  std::vector<int> parallel;                // per parallel site: loops fused (0: none)
  std::vector<int> vectorize;               // per vectorize site: 0 or 1
  std::vector<int> unroll;                  // per unroll site: an auto_unroll_choices() value
  std::vector<int> locations;               // per location site: 0 root, k at its k-th iterator
  std::vector<int> pipeline;                // per pipeline site: 0 or 1

  bool operator==(const SketchParams& o) const = default;
  nlohmann::json to_json() const;
};

// Throws tessera::Error when `params` does not fit `sketch` (a site count, a
// tile whose lengths do not divide its extent, a choice out of range).
void check_params(const Sketch& sketch, const SketchParams& params);
schedule::Trace instantiate(const Sketch& sketch, const SketchParams& params);
// The threads of block `block` of `sketch` under `params`, and the units
// (threads or warps) its lengths count.
int64_t block_threads(const Sketch& sketch, const SketchParams& params, int block);
int64_t block_units(const Sketch& sketch, const SketchParams& params, int block);

}  // namespace tessera::autoschedule
