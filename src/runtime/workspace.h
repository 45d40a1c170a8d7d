#pragma once
// Scratch buffers of generated kernels too large for the stack (the
// intermediate stages of a Winograd convolution, say), kept for reuse: malloc
// hands blocks this large back to the system on free, so a kernel called in a
// loop would fault in fresh pages on every call.
#include <cstdint>

namespace tessera::runtime {

// 64-byte aligned; from the calling thread's cache when it holds a block
// large enough.
void* workspace_alloc(int64_t bytes);
// Returns the block to the calling thread's cache (which frees the smallest
// blocks beyond a few).
void workspace_free(void* block);
// Blocks the calling thread's cache holds.
int workspace_cached_blocks();

}  // namespace tessera::runtime
