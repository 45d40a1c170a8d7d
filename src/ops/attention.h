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
// Sequence first, q is (groups, M, heads, D), k and v (groups, N, heads,
// D) and so is the output (groups, M, heads, D), b = group * heads + head:
// the layout a dense layer writes the heads in (its rows the tokens, its
// columns heads x D), so that no transpose copies them into (B, M, D) and
// back (graph/passes.h, attention_sequence_first). Packed (sequence first),
// q, k and v are each (groups, rows, 3, heads, D), of which q reads its part
// [:, :, 0], k [:, :, 1] and v [:, :, 2]: one dense layer's output whose
// columns are q's, k's and v's heads in turn, given three times
// (graph/passes.h, combine_qkv_projections). Three inputs still, so that
// each is an operand of its own to the kernel and the schedules.
struct AttentionAttrs {
  double scale = 1.0;
  int64_t heads = 1;      // B = groups * heads: how a mask's first two axes map onto B
  bool has_mask = false;  // a fourth input
  // Query rows per tile, and keys per tile (0: key_tile's choice): the
  // scores exist one (rows x keys) tile at a time, never the whole (B, M, N)
  // score matrix nor a whole row of it; each key tile keeps its own maximum
  // and sum, by which the tiles' results are rescaled when combined.
  int64_t rows = 4;
  int64_t keys = 0;
  bool sequence_first = false;  // q, k, v and the output (groups, rows, heads, D)
  bool packed = false;          // q, k and v (groups, rows, 3, heads, D), each read at its own part; sequence first
  std::string to_string() const;
};

// The keys the kernel computes for N keys: past kKeyVector, N rounded up to
// a multiple of it, so that every score row, its maximum, exponentials and
// sum are whole vectors (a ragged row reduces in scalar chains). A padded
// key scores the lowest float: its exponential is 0, it weighs nothing.
// With padded_rows, ViT's 197 tokens (208 keys, 200 rows) run at 0.93 x
// the GFLOPS of 192 tokens (55.9 against 60.4 on a Zen 3 core, 12 heads of
// 64, `build/attention_key_tiles --tokens 192,197,200`), where unpadded
// they ran at 0.40 x, keys padded alone 0.39 x, rows alone 0.50 x.
constexpr int64_t kKeyVector = 16;
int64_t padded_keys(int64_t n);

// The query rows the kernel computes for M rows in tiles of `rows`: M rounded
// up to whole tiles (past one tile), so that no row of a tile is guarded in
// the products' inner loops, where the guard keeps the accumulators out of
// registers. A padded row repeats row M - 1 and is never written out.
int64_t padded_rows(int64_t m, int64_t rows);

// Keys per tile for N keys: a given `keys` when it divides N; else all of
// them up to kWholeRowKeys, and past that the largest divisor of N from 64
// to kWholeRowKeys (N itself when it has none: a prime length is one tile).
constexpr int64_t kWholeRowKeys = 256;
int64_t key_tile(int64_t n, int64_t keys);

}  // namespace tessera::ops
