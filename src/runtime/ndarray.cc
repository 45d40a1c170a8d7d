#include "runtime/ndarray.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "support/checked_math.h"
#include "tessera/error.h"

namespace tessera::runtime {
namespace {

constexpr size_t kAlignment = 64;  // a cache line, and the widest vector register

// SplitMix64: tiny, fast, and the same on every platform (unlike std:: distributions).
uint64_t next_random(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

void NDArray::Free::operator()(float* p) const { std::free(p); }

NDArray::NDArray(std::vector<int64_t> shape) : shape_(std::move(shape)), size_(1) {
  // The message is built only when something is wrong.
  auto describe = [&] {
    std::string text = "NDArray of shape ";
    for (size_t i = 0; i < shape_.size(); ++i) text += (i ? "x" : "") + std::to_string(shape_[i]);
    return text;
  };
  for (int64_t extent : shape_)
    if (extent < 0) throw Error(describe() + ": negative extent");
  size_ = support::bounded_product(shape_, describe);
  // aligned_alloc wants a multiple of the alignment, and never a zero size.
  size_t bytes = static_cast<size_t>(size_) * sizeof(float);
  bytes = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (bytes == 0) bytes = kAlignment;
  auto* data = static_cast<float*>(std::aligned_alloc(kAlignment, bytes));
  if (data == nullptr)
    throw Error(describe() + ": cannot allocate " + std::to_string(bytes) + " bytes");
  std::memset(data, 0, bytes);
  data_.reset(data);
}

void NDArray::fill_random(uint64_t seed, float lo, float hi) {
  uint64_t state = seed;
  float* p = data();
  for (int64_t i = 0; i < size_; ++i) {
    // The top 24 bits give a uniform float in [0, 1) exactly.
    float unit = static_cast<float>(next_random(state) >> 40) * (1.0f / 16777216.0f);
    p[i] = lo + (hi - lo) * unit;
  }
}

NDArray copy_of(const NDArray& a) {
  NDArray c(a.shape());
  std::copy(a.data(), a.data() + a.size(), c.data());
  return c;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace tessera::runtime
