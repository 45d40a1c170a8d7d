#pragma once
// A dense fp32 tensor in host memory, 64-byte aligned.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera::runtime {

class NDArray {
 public:
  NDArray() = default;
  explicit NDArray(std::vector<int64_t> shape);  // zero-filled

  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t size() const { return size_; }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  float& operator[](int64_t i) { return data_.get()[i]; }
  float operator[](int64_t i) const { return data_.get()[i]; }
  // Uniform values in [lo, hi) from a fixed seed: runs are reproducible.
  void fill_random(uint64_t seed, float lo = -1.f, float hi = 1.f);

 private:
  struct Free { void operator()(float* p) const; };
  std::vector<int64_t> shape_;
  int64_t size_ = 0;
  std::unique_ptr<float, Free> data_;
};

// A new array holding `a`'s shape and values (NDArray itself does not copy:
// its buffers are large, and every copy is one a caller asked for).
NDArray copy_of(const NDArray& a);

// "[1, 3, 224, 224]": a shape in error messages.
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace tessera::runtime
