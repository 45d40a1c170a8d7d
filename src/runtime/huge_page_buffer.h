#pragma once
// A zero-filled block of memory that the kernel is asked to back with 2 MB
// pages where it can (Linux transparent huge pages, madvise mode). A model's
// weights and activations, 10-100 MB read once per inference, otherwise span
// thousands of 4 KB pages: more than the TLB holds, so every inference walks
// the page tables again for each of them.
#include <cstddef>
#include <cstdint>

namespace tessera::runtime {

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  // Throws tessera::Error naming `what` when the memory cannot be had.
  HugePageBuffer(size_t bytes, const char* what);
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  ~HugePageBuffer();

  char* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  char* base_ = nullptr;  // the mapping; data_ is its first huge-page boundary
  char* data_ = nullptr;
  size_t bytes_ = 0, mapped_ = 0;
};

}  // namespace tessera::runtime
