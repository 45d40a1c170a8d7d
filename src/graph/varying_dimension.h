#pragma once
// A dimension that varies at run time: an ONNX dim_param given a range
// (--dim sequence=1..512) or a range in an input's shape (--shape
// ids=1x1..512). Tessera compiles the model at a few sizes of it, the
// buckets, and runs an input padded to the smallest bucket that holds it:
// every kernel keeps a fixed-size schedule (and its tuning record), and one
// artifact holds the buckets. The padding wastes at most the gap to the next
// bucket.
//
// Padding is exact only where no computation carries a padded position into
// a valid one. pad_varying_dimension proves that of a graph node by node,
// from each operator's compute declaration: a tensor varies along an axis
// when it reads a varying axis of an input by that same loop variable
// (elementwise, a matrix product's rows, a gather's indices, a transpose);
// a reduction over a varying axis (a softmax over keys, attention) mixes the
// padded positions in, and is made exact by a mask of the padded keys that
// the runtime fills at each run. Anything else that touches a varying axis
// (a convolution window over a varying image axis, a mean over the
// sequence) is refused with the node named.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tessera::graph {

struct VaryingDimension {
  std::string name;  // the dim_param ("sequence"), or "ids[1]" for a --shape range
  int64_t min = 1, max = 1;
  std::vector<int64_t> buckets;  // increasing; the last is max
  // Whether the user listed the buckets (--buckets): a model that padding
  // would change then runs at exactly those sizes instead of being refused.
  bool listed = false;

  // "sequence in 1..512 (buckets 16 32 64 128 256 512)"
  std::string to_string() const;
};

// Powers of two from the larger of `min` and max / 32, then `max`: an input
// is padded to less than twice its size, except below max / 32 (a
// sequence of 3 runs at 16 of 512), which keeps compile time to a few buckets.
std::vector<int64_t> default_buckets(int64_t min, int64_t max);

// Checks buckets given by the user (--buckets): increasing, within
// [min, max], the last one max (added when missing), at most kMaxBuckets.
// Throws naming the bad one.
inline constexpr size_t kMaxBuckets = 12;
std::vector<int64_t> checked_buckets(std::vector<int64_t> buckets, int64_t min, int64_t max);

// Where a tensor varies: axis -> positions per unit of the dimension (1,
// or k where a reshape merged the dimension with a fixed axis of k inside it).
using VaryingAxes = std::map<int, int64_t>;

// The mask of padded keys: float32[bucket], 0 at the valid positions and
// kPaddedKey at the padded ones, set by the runtime at every run.
inline constexpr const char* kPaddingMaskInput = "tessera.padding_mask";
inline constexpr float kPaddedKey = -1e30f;

struct PaddedGraph {
  Graph graph;                                // with the mask added where one is needed
  std::map<std::string, VaryingAxes> inputs;  // by input name; fixed inputs absent
  std::vector<VaryingAxes> outputs;           // per graph output
  bool masked = false;                        // whether the graph reads kPaddingMaskInput
  // Why padding would change the result, naming the node ("" when it would
  // not); then `graph` is the one given, unmasked, and no output is cut.
  std::string inexact;
};

// `at_bucket`: the model after the passes at size `bucket` of the dimension;
// `at_other`: the same at another size (its inputs show which axes vary, its
// constants must agree with this graph's on the positions both have);
// `min`: the smallest size, whose positions every run has. Throws
// tessera::Error when the two sizes' inputs or constants disagree beyond
// the dimension's positions.
PaddedGraph pad_varying_dimension(const Graph& at_bucket, int64_t bucket, const Graph& at_other, int64_t other_size,
                                  int64_t min);

}  // namespace tessera::graph
