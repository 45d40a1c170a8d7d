#pragma once
// The steps a schedule is made of. Stages and iterators are named (iterator
// names after a split are "x.0" (outer) .. "x.k", after a fuse "a@b"), so a
// trace reads like the loop nest it builds.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace tessera::schedule {

// Parallel, Vectorize and Unroll are CPU loop kinds; TensorCore marks the
// first of a stage's innermost loops that one warp computes as a whole on a
// GPU's tensor cores (tir::ForKind::TensorCore says which); the rest bind a
// loop to a GPU's grid ("bind" in TVM): its iterations become the blocks or
// the threads of a block along x, y or z, or virtual threads (a loop each
// thread runs, interleaved by the code generator). DotProduct marks a reduce
// loop of 4 whose body is a vectorized loop adding, in each 32-bit lane, the
// products of unsigned and signed bytes: a CPU computes the 4 products and
// their sum in one instruction (tir::ForKind::DotProduct says which).
// Pipeline (GPU): a loop whose body fetches into shared memory and then
// computes on what it fetched; the next iteration's fetches are loaded
// while this one computes (tir::ForKind::Pipelined).
enum class Annotation {
  None, Parallel, Vectorize, Unroll, TensorCore, DotProduct, Pipeline,
  BlockX, BlockY, BlockZ, ThreadX, ThreadY, ThreadZ, VThread,
};
// "parallel", ..., "tensor_core", "dot_product", "pipeline", "blockIdx.x", "threadIdx.y", "vthread"
std::string to_string(Annotation a);
Annotation annotation_from_string(const std::string& s);  // throws tessera::Error
bool is_gpu_binding(Annotation a);

struct SplitStep {       // iter -> outer, then one iterator per inner length
  std::string stage, iter;
  std::vector<int64_t> lengths;
};
struct ReorderStep {     // the stage's new loop order (a permutation of all its iterators)
  std::string stage;
  std::vector<std::string> order;
};
struct FuseStep {        // adjacent iterators, outermost first
  std::string stage;
  std::vector<std::string> iters;
};
struct AnnotateStep {
  std::string stage, iter;
  Annotation annotation = Annotation::None;
};
struct ComputeAtStep {   // compute `stage` inside loop `target_iter` of `target_stage`
  std::string stage, target_stage, target_iter;
};
struct ComputeInlineStep {
  std::string stage;
};
struct ComputeRootStep {
  std::string stage;
};
// Memory a cache stage's buffer lives in on a GPU: "local" (each thread's
// registers), "shared" (one copy per block, filled by its threads together),
// "fragment" (a cache_write's accumulator held by a warp's tensor cores:
// tir::MemoryScope::Fragment); on a CPU all are a scratch buffer. Steps
// written without one read "".
struct CacheWriteStep {  // adds stage "<stage>.local" that computes into a buffer of `scope` ("" = "local", "fragment")
  std::string stage;
  std::string scope;
};
// Adds stage "<tensor>.cache" that copies `tensor` (an input of `stage`)
// with its dimensions in the order `layout` (cache[d...] holds
// tensor[...] where cache dimension i is tensor dimension layout[i]); the
// stage reads the copy instead. Computed inside the stage's tiles, the copy
// is a packed tile: what was a strided read becomes a contiguous one.
// With scope "shared" the copy is one per block: its region is what all the
// block's threads read, and lowering puts barriers around its use.
// With dtype "float16" the copy is stored in half precision: exact for values
// that are halves (a tensor-core operand of a half-storage kernel; others
// would be rounded, so a schedule asks only there), half the shared memory,
// and read by mma.sync as they are; "" keeps the tensor's arithmetic type
// (a half tensor's copy in fp32, converted once as fetched).
struct CacheReadStep {
  std::string stage, tensor;
  std::vector<int> layout;
  std::string scope;  // "", "shared" or "local"
  std::string dtype;  // "" or "float16"
};
// Splits reduce axis `axis` of a stage into axis_o (outer) and axis_i of
// length `factor`, and factors the reduction in two: stage "<stage>.rf"
// keeps axis_i as its last spatial axis and reduces over the rest; the
// stage itself reduces the rf stage over axis_i. The partial results of the
// rf stage are independent, so its reduction can run in parallel or in
// vector lanes. Partial axis_i sums the values axis = axis_o * factor +
// axis_i (every factor-th: lanes of a vector reading consecutive values);
// `by_range`, the axis_i-th range of extent / factor consecutive values,
// axis = axis_i * (extent / factor) + axis_o, and axis_i is the rf stage's
// first axis (GPU blocks per range each stage a compact slice of the
// operands and write a contiguous block of partial results: split-K).
struct RfactorStep {
  std::string stage, axis;
  int64_t factor = 1;
  bool by_range = false;
};
struct PragmaStep {      // "auto_unroll_max_step$N": unroll inner loops of up to N iterations
  std::string stage, iter;
  std::string pragma;
};

using Step = std::variant<SplitStep, ReorderStep, FuseStep, AnnotateStep, ComputeAtStep,
                          ComputeInlineStep, ComputeRootStep, CacheWriteStep, CacheReadStep, RfactorStep,
                          PragmaStep>;


}  // namespace tessera::schedule
