// The kernels' scratch buffers: aligned, reused after they are given back
// (so a kernel called in a loop does not fault in fresh pages each call), a
// larger request is not served by a smaller block, and a thread's cache is
// bounded.
#include "runtime/workspace.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace tessera::runtime {
namespace {

TEST(Workspace, BlocksAreAlignedWritableAndReusedOnceFreed) {
  void* a = workspace_alloc(1 << 20);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  std::memset(a, 1, 1 << 20);
  workspace_free(a);
  void* again = workspace_alloc(1000);  // the freed block is large enough
  EXPECT_EQ(again, a);
  void* larger = workspace_alloc(2 << 20);  // it is not
  EXPECT_NE(larger, a);
  std::memset(larger, 2, 2 << 20);
  workspace_free(again);
  workspace_free(larger);
  EXPECT_EQ(workspace_alloc(2 << 20), larger);  // the smallest block that fits
  EXPECT_EQ(workspace_alloc(1 << 20), a);
  workspace_free(a);
  workspace_free(larger);
}

TEST(Workspace, ACacheBeyondEightBlocksFreesTheSmallest) {
  std::vector<void*> blocks;
  for (int i = 1; i <= 10; ++i) blocks.push_back(workspace_alloc(int64_t{i} << 16));
  for (void* b : blocks) workspace_free(b);
  EXPECT_EQ(workspace_cached_blocks(), 8);
  EXPECT_EQ(workspace_alloc(int64_t{10} << 16), blocks[9]);  // the largest stay
  EXPECT_EQ(workspace_cached_blocks(), 7);
  workspace_free(blocks[9]);
}

}  // namespace
}  // namespace tessera::runtime
