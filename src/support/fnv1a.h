#pragma once
// FNV-1a over a string's bytes: the stable hash workload keys, record keys
// and the seeds of generated weights are made from (the same input gives the
// same hash on every machine and run). `basis` starts the hash: the
// standard offset basis, or another to get a second, independent hash.
#include <cstdint>
#include <string_view>

namespace tessera::support {

inline constexpr uint64_t kFnvOffsetBasis = 14695981039346656037ull;

inline uint64_t fnv1a(std::string_view text, uint64_t basis = kFnvOffsetBasis) {
  uint64_t h = basis;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace tessera::support
