#pragma once
// How a store statement and its enclosing loops walk memory: the pieces
// both feature sets (loop_features.h, store_features.h) are computed from.
#include <cstdint>
#include <vector>

#include "tir/arith.h"
#include "tir/stmt.h"

namespace tessera::features {

struct Loop {
  ir::Var var;
  int64_t extent;
  tir::ForKind kind;
};

// One buffer as a store sees it: the buffer it writes, or one it reads
// (several reads of one buffer share an Access; the first decides the indices).
struct Access {
  ir::Tensor buffer;
  std::vector<ir::Expr> indices;
  bool written = false;
  bool read = false;
  std::vector<tir::LinearForm> forms;  // linear form of each index
};

// One access under loop d: loops d.. run, the loops outside it are held at 0.
struct AccessStats {
  double stride = 0;          // of the flattened (row-major) index w.r.t. loop d's variable
  bool nonlinear = false;     // the index depends on loop d through a floordiv, floormod or product
  double touched_bytes = 0;   // distinct bytes (per-dimension index ranges, capped by the iterations)
  double reuse = 0;           // accesses / distinct elements
};

// log2(1 + x), x clamped at 0: how the features compress quantities that span orders of magnitude.
float lg(double x);

// The written buffer first, then each buffer the store's value reads, in first-use order.
std::vector<Access> collect_accesses(const tir::StoreNode* store);
AccessStats access_stats(const Access& a, const std::vector<Loop>& loops, size_t d);

}  // namespace tessera::features
