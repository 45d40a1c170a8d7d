#pragma once
// A schedule's state: for every compute tensor of a DAG a stage with its
// current loop nest (iterators, outermost first), annotations and attachment.
// Steps (schedule/trace.h) transform a State; lowering (tir/lower.h) reads it.
#include <map>
#include <string>
#include <vector>

#include "ir/compute_dag.h"
#include "schedule/step.h"

namespace tessera::schedule {

// Limits that keep a hostile schedule from exhausting the stack (each
// iterator is a loop, each split length a term of an index expression).
inline constexpr size_t kMaxSplitLengths = 16;
inline constexpr size_t kMaxStageIterators = 64;

struct Iterator {
  std::string name;
  ir::Var var;      // the loop variable lowering will use
  int64_t extent = 1;
  ir::IterKind kind = ir::IterKind::Spatial;
  Annotation annotation = Annotation::None;
};

enum class Location { Root, Inlined, At };

struct Stage {
  ir::Tensor tensor;             // what the stage computes (may differ from the DAG's after cache_write)
  std::vector<Iterator> iters;   // loop order, outermost first
  // Value of each original axis (spatial axes then reduce axes of `tensor`)
  // as an expression of the iterators' variables.
  std::vector<ir::Expr> axis_values;
  // Conditions that keep non-divisible splits inside the original ranges.
  std::vector<ir::Expr> guards;
  Location location = Location::Root;
  std::string attach_stage;  // Location::At: consumer stage name
  std::string attach_iter;   // ... and the iterator inside which this stage is computed
  int64_t auto_unroll_max_step = 0;
  // The split/fuse/reorder/annotate steps applied to this stage, in order, so
  // that lowering can re-derive the loops over a smaller region (compute_at).
  std::vector<Step> loop_steps;

  const std::string& name() const { return tensor->name; }
  int iter_index(const std::string& iter_name) const;  // throws tessera::Error when absent

  // Loop transforms of this stage alone; each records itself in loop_steps.
  void split(const SplitStep& step);
  void fuse(const FuseStep& step);
  void reorder(const ReorderStep& step);
  void annotate(const AnnotateStep& step);
  // The same stage with its spatial axes ranging over `extents` instead of the
  // tensor's shape, its loop steps replayed.
  Stage rebind(const std::vector<int64_t>& extents) const;
};

class State {
 public:
  explicit State(const ir::ComputeDAG& dag);

  const ir::ComputeDAG& dag() const { return dag_; }
  const std::vector<Stage>& stages() const { return stages_; }
  std::vector<Stage>& stages() { return stages_; }
  int stage_index(const std::string& name) const;  // throws tessera::Error when absent
  Stage& stage(const std::string& name) { return stages_[stage_index(name)]; }
  const Stage& stage(const std::string& name) const { return stages_[stage_index(name)]; }
  // The stage that computes a tensor node (including tensors replaced by cache_write), or -1.
  int stage_of(const ir::TensorNode* t) const;
  void alias(const ir::TensorNode* t, int stage);
  // Inserts a stage before position `pos`, keeping the alias table in step.
  void insert_stage(int pos, Stage s);
  // Readable loop-nest summary, one stage per line.
  std::string print() const;

 private:
  ir::ComputeDAG dag_;
  std::vector<Stage> stages_;
  std::map<const ir::TensorNode*, int> stage_of_;
};

// A fresh stage of a compute tensor with one iterator per axis; `extents`
// overrides the spatial extents (default: the tensor's shape).
Stage make_stage(const ir::Tensor& t, const std::vector<int64_t>& extents = {});

}  // namespace tessera::schedule
