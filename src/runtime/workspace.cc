#include "runtime/workspace.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace tessera::runtime {
namespace {

// Each block starts with a header holding its usable size.
constexpr size_t kHeader = 64;
constexpr size_t kCachedBlocks = 8;

size_t& size_of(void* block) { return *reinterpret_cast<size_t*>(static_cast<char*>(block) - kHeader); }

struct Cache {
  std::vector<void*> blocks;
  ~Cache() {
    for (void* b : blocks) std::free(static_cast<char*>(b) - kHeader);
  }
};

thread_local Cache cache;

}  // namespace

void* workspace_alloc(int64_t bytes) {
  const size_t wanted = std::max<size_t>(64, (static_cast<size_t>(bytes) + 63) / 64 * 64);
  // The smallest cached block that is large enough.
  auto best = cache.blocks.end();
  for (auto it = cache.blocks.begin(); it != cache.blocks.end(); ++it)
    if (size_of(*it) >= wanted && (best == cache.blocks.end() || size_of(*it) < size_of(*best))) best = it;
  if (best != cache.blocks.end()) {
    void* block = *best;
    cache.blocks.erase(best);
    return block;
  }
  char* raw = static_cast<char*>(std::aligned_alloc(64, wanted + kHeader));
  if (raw == nullptr) return nullptr;  // as malloc: kernels cannot unwind an exception
  void* block = raw + kHeader;
  size_of(block) = wanted;
  return block;
}

void workspace_free(void* block) {
  if (block == nullptr) return;
  cache.blocks.push_back(block);
  if (cache.blocks.size() <= kCachedBlocks) return;
  auto smallest = std::min_element(cache.blocks.begin(), cache.blocks.end(),
                                   [](void* a, void* b) { return size_of(a) < size_of(b); });
  std::free(static_cast<char*>(*smallest) - kHeader);
  cache.blocks.erase(smallest);
}

int workspace_cached_blocks() { return static_cast<int>(cache.blocks.size()); }

}  // namespace tessera::runtime
