#pragma once
// Sketch rules (Ansor's derivation rules). Sketch generation visits the
// stages from the last to the first; at each stage it tries a target's rules
// in order (cpu_sketch_rules.h). A rule that does not meet its condition
// passes; one that does derives one or more sketches from the current one,
// and either lets the following rules derive theirs too (Apply) or is the
// last rule tried at that stage (ApplyAndSkipRest).
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autoschedule/sketch.h"
#include "target/target.h"
#include "schedule/state.h"

namespace tessera::autoschedule {

// A sketch being derived, with the schedule state it stands for (splits at
// length 1, so names and loop orders are those of the finished schedule).
class SketchBuilder {
 public:
  explicit SketchBuilder(const ir::ComputeDAG& dag) : state_(dag) { sketch_.dag = dag; }

  const schedule::State& state() const { return state_; }
  const Sketch& sketch() const { return sketch_; }
  const schedule::Stage& stage(int index) const { return state_.stages().at(index); }

  void add(const schedule::Step& step);
  // Fuses `iters` (adjacent, outermost first) unless there is one; returns the loop.
  std::string fuse(const std::string& stage, const std::vector<std::string>& iters);
  // Splits `iter` into `lengths` + 1 loops whose lengths are a new tile slot; returns the slot.
  int tile(const std::string& stage, const std::string& iter, int lengths);
  // A tile slot no split uses directly (only FollowSplits of it); returns the slot.
  int add_slot(TileSlot slot);
  // Splits `iter` by products of groups of a slot's lengths (FollowSplit).
  void follow(const std::string& stage, const std::string& iter, int slot, std::vector<int> groups, int skip = 0);
  // Factors the reduction of `stage` over `axis` by the product of a slot's
  // lengths (TiledRfactor): stage "<stage>.rf" comes before it.
  void rfactor(const std::string& stage, const std::string& axis, int slot);
  // A GPU block whose threads are the product of tile lengths; returns its index.
  int add_block(BlockThreads threads);
  // Splits `iter` by the units of `block` (threads, or warps and their
  // lanes), and by `lanes` when vectorize site `vector_site` is on (FetchSplit).
  void fetch_split(const std::string& stage, const std::string& iter, int block, int vector_site = -1,
                   int64_t lanes = kFetchLanes);
  void note(std::string rule) { sketch_.rules.push_back(std::move(rule)); }
  Sketch& sites() { return sketch_; }
  // Stages whose annotation sites a rule has chosen; the rest get the plain ones.
  void mark_structured(const std::string& stage) { structured_.push_back(stage); }
  bool structured(const std::string& stage) const;

 private:
  schedule::State state_;
  Sketch sketch_;
  std::vector<std::string> structured_;
};

struct SketchContext {
  target::Target target;
  int threads = 1;  // the kernels' threads: the parallelism a stage must offer
};

class SketchRule {
 public:
  enum class Condition { Pass, Apply, ApplyAndSkipRest };
  virtual ~SketchRule() = default;
  virtual std::string name() const = 0;
  virtual Condition condition(const SketchContext& ctx, const SketchBuilder& b, int stage) const = 0;
  // The sketches derived at `stage`, each with the stage to visit next
  // (a rule that inserts a stage may visit the new one next).
  virtual std::vector<std::pair<SketchBuilder, int>> apply(const SketchContext& ctx, const SketchBuilder& b,
                                                           int stage) const = 0;
};

using SketchRules = std::vector<std::unique_ptr<SketchRule>>;

// What the rules of every target ask of a stage's loops.
// The stage's iterator names by kind, as the DAG declares them (the stage is
// not transformed yet when a tiling rule reaches it).
std::vector<std::string> names_of(const schedule::Stage& s, ir::IterKind kind);
// Part `part` of every iterator in `names` (schedule::split_part).
std::vector<std::string> parts(const std::vector<std::string>& names, size_t part);
// No rule has transformed the stage yet: its loops are the DAG's, at root.
bool untouched(const schedule::Stage& s);
std::vector<std::string> concat(std::initializer_list<std::vector<std::string>> lists);
// The plain GPU stage (generate_sketches.h) of a root stage: its spatial
// loops fused and split into blocks of whole warps (schedule::gpu_block_threads,
// as the hand-written schedule makes them), one output element per thread,
// an unroll site when it reduces. Returns the thread loop ("" when the
// stage is not at root or has no spatial loop: it is left as it is).
std::string add_plain_gpu_stage(SketchBuilder& b, int stage, int max_threads);

}  // namespace tessera::autoschedule
