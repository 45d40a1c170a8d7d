#pragma once
// The attributes of the reductions (ops/reduce.cc): reduce_sum, reduce_mean,
// reduce_max, reduce_min, reduce_l2 over any axes.
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::ops {

struct ReduceAttrs {
  std::vector<int64_t> axes;  // negative counts from the last; empty: every axis
  bool keepdims = true;       // reduced axes stay as extents of 1
  std::string to_string() const;
};

}  // namespace tessera::ops
