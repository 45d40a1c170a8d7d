#pragma once
// Arithmetic on sizes and extents that come from users (shapes, paddings,
// split lengths): an overflow is a tessera::Error naming what was computed,
// never a wrapped value that later divides by zero or sizes an allocation.
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/error.h"

namespace tessera::support {

// The most elements a tensor, or iterations a loop, may have: 2^40, far past
// any memory here, yet far from overflowing the index arithmetic of a kernel
// (flattened indices, and their products with strides, stay within 64 bits).
inline constexpr int64_t kMaxExtent = int64_t{1} << 40;

inline int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(what + ": " + std::to_string(a) + " * " + std::to_string(b) + " overflows");
  return r;
}

inline int64_t checked_add(int64_t a, int64_t b, const std::string& what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw Error(what + ": " + std::to_string(a) + " + " + std::to_string(b) + " overflows");
  return r;
}

// The product of `values`, each and all at most kMaxExtent; throws naming `what`.
inline int64_t bounded_product(const std::vector<int64_t>& values, const std::string& what) {
  int64_t n = 1;
  for (int64_t v : values) {
    n = checked_mul(n, v, what);
    if (n > kMaxExtent || n < -kMaxExtent) throw Error(what + ": more than 2^40 elements");
  }
  return n;
}

}  // namespace tessera::support
