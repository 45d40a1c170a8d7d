#include "runtime/huge_page_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "tessera/error.h"

namespace tessera::runtime {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

HugePageBuffer::HugePageBuffer(size_t bytes, const char* what) : bytes_(bytes) {
  // Whole huge pages, aligned to one: the mapping is padded by a page and
  // trimmed to an aligned start (munmap releases the whole padded mapping).
  const size_t rounded = (std::max<size_t>(bytes, 1) + kHugePage - 1) / kHugePage * kHugePage;
  mapped_ = rounded + kHugePage;
  void* p = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw Error(std::string(what) + ": cannot allocate " + std::to_string(bytes) + " bytes");
  base_ = static_cast<char*>(p);
  const auto address = reinterpret_cast<uintptr_t>(base_);
  data_ = base_ + ((kHugePage - address % kHugePage) % kHugePage);
  // Advice only: without transparent huge pages the buffer still works, in 4 KB pages.
  ::madvise(data_, rounded, MADV_HUGEPAGE);
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept { *this = std::move(other); }

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    if (base_) ::munmap(base_, mapped_);
    base_ = std::exchange(other.base_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

HugePageBuffer::~HugePageBuffer() {
  if (base_) ::munmap(base_, mapped_);
}

}  // namespace tessera::runtime
