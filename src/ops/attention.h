#pragma once
// The attributes of attention (ops/attention.cc).
#include <cstdint>
#include <string>

#include "ops/common.h"

namespace tessera::ops {

// out[b, i, :] = softmax_j(scale * q[b, i, :] . k[b, j, :] + mask) . v[b, j, :]
// for q (B, M, D), k and v (B, N, D): scaled dot-product attention of B =
// groups x heads rows. The optional fourth input, a mask added to the
// scores, has four axes (groups, heads, M, N), each of its extent or 1.
struct AttentionAttrs {
  double scale = 1.0;
  int64_t heads = 1;      // B = groups * heads: how a mask's first two axes map onto B
  bool has_mask = false;  // a fourth input
  // Query rows per tile: each tile's scores (rows x N) live in the kernel's
  // local memory, never the whole (B, M, N) score matrix.
  int64_t rows = 4;
  std::string to_string() const;
};

}  // namespace tessera::ops
