#pragma once
// Arithmetic on sizes and extents that come from users (shapes, paddings,
// split lengths): an overflow is a tessera::Error naming what was computed,
// never a wrapped value that later divides by zero or sizes an allocation.
#include <concepts>
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

// The product of `values`, each partial product at most kMaxExtent; throws
// naming describe(), which is called only then (callers on hot paths, like
// element counts, build no message when nothing is wrong).
template <std::invocable Describe>
int64_t bounded_product(const std::vector<int64_t>& values, Describe&& describe) {
  int64_t n = 1;
  for (int64_t v : values) {
    int64_t next = 0;
    if (__builtin_mul_overflow(n, v, &next))
      throw Error(std::string(describe()) + ": " + std::to_string(n) + " * " + std::to_string(v) + " overflows");
    if (next > kMaxExtent || next < -kMaxExtent) throw Error(std::string(describe()) + ": more than 2^40 elements");
    n = next;
  }
  return n;
}

inline int64_t bounded_product(const std::vector<int64_t>& values, const std::string& what) {
  return bounded_product(values, [&] { return what; });
}

}  // namespace tessera::support
